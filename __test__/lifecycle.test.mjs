import { test } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { spawn } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  mockClient,
  mockSession,
  alive,
  identify,
  reported,
  processes,
  MOCK_AGENT,
  SCALED_TIMEOUTS,
} from './helpers.mjs';
import { AcpClient } from '../index.mjs';

// Process groups and PDEATHSIG are POSIX/Linux; the wrapper is an `sh` script.
const UNIX_ONLY = { skip: process.platform === 'win32' && 'sh wrapper and POSIX process groups' };
const LINUX_ONLY = { skip: process.platform !== 'linux' && 'relies on PR_SET_PDEATHSIG and /proc (Linux)' };

const HOST = fileURLToPath(new URL('./fixtures/host.mjs', import.meta.url));

/** `target`: a pid, or better an `identify()` result taken while it ran. */
async function goneWithin(target, ms) {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (!alive(target)) return true;
    await sleep(20);
  }
  return !alive(target);
}

/** Run the host fixture; resolves with the agent pid once printed, and the host process. */
function startHost(mode, agentArgs = []) {
  const host = spawn(process.execPath, [HOST, mode, ...agentArgs], { stdio: ['pipe', 'pipe', 'pipe'] });
  let out = '';
  const exited = new Promise((resolve) => host.on('exit', (code, signal) => resolve({ code, signal })));
  const pids = new Promise((resolve, reject) => {
    host.stdout.on('data', (d) => {
      out += d;
      const m = /agent (\d+) wrapper (\d+)/.exec(out);
      if (m)
        resolve({ agent: identify(Number(m[1])), wrapper: identify(Number(m[2])), go: () => host.stdin.end('go\n') });
    });
    host.on('exit', () => reject(new Error(`host exited before printing pids: ${out}`)));
  });
  return { host, pids, exited };
}

for (const [mode, how] of [
  ['exit', 'process.exit()'],
  ['throw', 'an uncaught exception'],
  ['idle', 'a natural exit with an idle (unref) client'],
]) {
  test(`no agent is left after the host ends by ${how}`, UNIX_ONLY, async () => {
    // The grandchild ignores stdin EOF: only a kill of the group stops it.
    const { pids, exited } = startHost(mode, ['--ignore-eof']);
    const { agent, wrapper, go } = await pids;
    assert.equal(alive(agent), true);
    go();
    await exited;
    assert.equal(await goneWithin(agent, 2000), true, 'agent survived the host');
    assert.equal(await goneWithin(wrapper, 2000), true, 'wrapper survived the host');
  });
}

for (const signal of ['SIGTERM', 'SIGKILL']) {
  test(`no agent is left after the host is killed with ${signal}`, LINUX_ONLY, async () => {
    // The grandchild ignores stdin EOF: only the reaper stops it.
    const { host, pids, exited } = startHost('wait', ['--ignore-eof']);
    const { agent, wrapper, go } = await pids;
    go();
    await sleep(100);
    host.kill(signal);
    assert.equal((await exited).signal, signal);
    // The lifeline closes with the host; the reaper kills the whole tree.
    assert.equal(await goneWithin(wrapper, 2000), true, 'wrapper survived');
    assert.equal(await goneWithin(agent, 3000), true, 'agent survived');
  });
}

test('a ref()ed client keeps the host alive; close() after that ends it', UNIX_ONLY, async () => {
  const { host, pids, exited } = startHost('ref');
  const { agent, go } = await pids;
  go();
  await sleep(500);
  assert.equal(host.exitCode, null, 'host exited although the client was ref()ed');
  host.kill('SIGKILL');
  await exited;
  assert.equal(await goneWithin(agent, 3000), true);
});

test('close() stops a wrapper whose grandchild ignores EOF and SIGTERM', UNIX_ONLY, async () => {
  const client = new AcpClient({
    ...SCALED_TIMEOUTS,
    command: 'sh',
    args: ['-c', `"${process.execPath}" "${MOCK_AGENT}" --ignore-eof --ignore-sigterm; true`],
    closeGraceMs: 100,
    termGraceMs: 100,
  });
  const init = await client.initialize();
  const grandchild = identify(init._meta.pid);
  const wrapper = identify(client.pid);
  const exit = await client.close();
  assert.equal(exit.reason, 'closed');
  assert.equal(await goneWithin(grandchild, 1000), true);
  assert.equal(await goneWithin(wrapper, 1000), true);
});

function childrenOf(pid) {
  return processes()
    .filter((p) => p.ppid === pid && p.state !== 'Z')
    .map((p) => p.pid);
}

test('200 spawn/initialize/close cycles leave no children, fds or memory behind', LINUX_ONLY, async () => {
  const fds = () => readdirSync('/proc/self/fd').length;
  // Warm up (runtime threads, first-use allocations), then measure.
  for (let i = 0; i < 5; i++) {
    const c = mockClient();
    await c.initialize();
    await c.close();
  }
  global.gc?.();
  const fdsBefore = fds();
  const rssBefore = process.memoryUsage.rss();
  for (let i = 0; i < 200; i++) {
    const c = mockClient();
    await c.initialize();
    await c.close();
  }
  global.gc?.();
  const fdGrowth = fds() - fdsBefore;
  const rssGrowthMb = (process.memoryUsage.rss() - rssBefore) / 2 ** 20;
  console.log(`# 200 cycles: fd growth ${fdGrowth}, RSS growth ${rssGrowthMb.toFixed(1)} MB`);
  assert.deepEqual(childrenOf(process.pid), []);
  assert.ok(fdGrowth <= 2, `fds grew by ${fdGrowth}`);
  assert.ok(rssGrowthMb < 40, `RSS grew by ${rssGrowthMb.toFixed(1)} MB`);
});

test('a crash mid-turn rejects the pending prompt promptly with exit code and stderr tail', async () => {
  const { client, sessionId } = await mockSession();
  const err = await client.prompt({ sessionId, prompt: 'crash:9' }).catch((e) => e);
  const rejectedAt = Date.now();
  assert.equal(err.code, 'ERR_ACP_CLOSED');
  assert.equal(err.exitCode, 9);
  const crashedAt = Number(/at (\d+)/.exec(err.stderrTail)[1]);
  console.log(`# crash to rejection: ${rejectedAt - crashedAt} ms`);
  assert.ok(rejectedAt - crashedAt < 1000);
});

test('a hung agent: initialize times out, the agent is killed and its stderr reported', async () => {
  // The tail comes from the core's ring (JS keeps no copy): wait until the
  // core has read the line, so the timeout cannot race the agent's start.
  const client = mockClient({ initializeTimeoutMs: 300 }, [
    '--hang-init',
    '--banner',
    '--stderr-line',
    'loading model weights…',
  ]);
  const agent = identify(client.pid);
  await once(client.ref(), 'stderr'); // ref: nothing else keeps Node alive meanwhile
  await assert.rejects(client.initialize(), (err) => {
    assert.equal(err.code, 'ERR_ACP_TIMEOUT');
    assert.equal(err.method, 'initialize');
    assert.match(err.stderrTail, /loading model weights…/);
    return true;
  });
  assert.equal(await goneWithin(agent, 2000), true);
});

test('$/cancel_request from the agent aborts the handler and is answered -32800', async () => {
  let signal;
  const { client, sessionId, updates } = await mockSession({
    handlers: {
      '_x/question': (_p, ctx) => {
        signal = ctx.signal;
        return new Promise(() => {});
      },
    },
  });
  await client.prompt({ sessionId, prompt: 'withdraw:_x/question' });
  assert.equal(reported(updates, 'withdraw').error.code, -32800);
  assert.equal(signal.aborted, true);
  await client.close();
});

test('updates that arrive before session/new answers are delivered, not dropped', async () => {
  const updates = [];
  const client = mockClient({ onSessionUpdate: (p) => updates.push(p) }, ['--replay-on-new']);
  await client.initialize();
  const { sessionId } = await client.newSession();
  assert.equal(updates.length, 1);
  assert.equal(updates[0].sessionId, sessionId);
  await client.close();
});

test('a 100 MiB line is skipped with a protocolError and the connection survives', async () => {
  const { client, sessionId, updates } = await mockSession();
  const errors = [];
  client.on('protocolError', (e) => errors.push(e));
  const result = await client.prompt({ sessionId, prompt: `bigline:${100 * 2 ** 20} say:still_here` });
  assert.equal(result.stopReason, 'end_turn');
  assert.equal(errors.length, 1);
  assert.equal(errors[0].kind, 'oversized');
  assert.deepEqual(
    updates.map((u) => u.content.text),
    ['still here'],
  );
  await client.close();
});

test('a 300 MB flood into a handler that awaits 5 ms keeps host memory bounded', async () => {
  let peak = 0;
  let received = 0;
  // (Not mockSession: it keeps every update, which is what we measure.)
  const client = mockClient({
    onSessionUpdate: async () => {
      received++;
      await sleep(5);
    },
  });
  await client.initialize();
  const { sessionId } = await client.newSession();
  global.gc?.();
  const before = process.memoryUsage.rss();
  const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage.rss())), 10);
  const count = 4800;
  await client.prompt({ sessionId, prompt: `flood:${count}:65536` });
  clearInterval(sampler);
  const growthMb = (peak - before) / 2 ** 20;
  console.log(`# flood of ${count} x 64 KiB: peak RSS +${growthMb.toFixed(1)} MB`);
  assert.equal(received, count);
  assert.ok(growthMb < 100, `peak RSS grew by ${growthMb.toFixed(1)} MB`);
  await client.close();
});
