// Resource budgets against a hostile agent (fixtures/hostile-agent.mjs):
// every attack is answered with a typed refusal or bounded, and the host's
// memory high-water mark (Linux: VmHWM, reset through clear_refs) stays
// within generous bounds. No assertion here depends on timing.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, statSync, writeFileSync, openSync, ftruncateSync, closeSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { AcpClient } from '../index.mjs';
import { tempTree, pidsWithArg, eventually } from './builtin-helpers.mjs';
import { HOSTILE_AGENT as HOSTILE, nativeOnly } from './helpers.mjs';

// The answers' `bytes` (from fixtures/hostile-agent.mjs) are UTF-8 bytes.

const linux = process.platform === 'linux' && existsSync('/proc/self/clear_refs');
const unix = process.platform !== 'win32';

function hostile(options = {}, args = []) {
  return new AcpClient({ command: process.execPath, args: [HOSTILE, ...args], ...options });
}

async function session(options = {}, cwd, args) {
  const client = hostile(options, args);
  await client.initialize();
  const { sessionId } = await client.newSession({ cwd: cwd ?? process.cwd() });
  const attack = (method, params) => client.request(`_attack/${method}`, params, { timeoutMs: 0 });
  return { client, sessionId, attack };
}

/** Reset the peak RSS, run `fn`, return the growth of the peak in MB. */
async function peakGrowthMB(fn) {
  const read = (key) =>
    Number(new RegExp(`${key}:\\s+(\\d+)`).exec(readFileSync('/proc/self/status', 'utf8'))[1]) / 1024;
  globalThis.gc?.();
  const base = read('VmRSS');
  writeFileSync('/proc/self/clear_refs', '5');
  await fn();
  return read('VmHWM') - base;
}

const permission = (sessionId) => ({
  sessionId,
  toolCall: { toolCallId: 't1', title: 'x' },
  options: [{ optionId: 'allow', name: 'Allow', kind: 'allow_once' }],
});

test('agent requests over the cap are refused with a typed reason; the host hears once and stays usable', async () => {
  const seen = [];
  const refused = [];
  const { client, sessionId, attack } = await session({
    maxPendingAgentRequests: 16,
    handlers: {
      // Waits for a user who never comes (until cancel()).
      'session/request_permission': (params, { signal }) =>
        new Promise((resolve) => {
          seen.push(params);
          signal.addEventListener('abort', () => resolve({ outcome: { outcome: 'cancelled' } }));
        }),
    },
  });
  client.on('requestRefused', (e) => refused.push(e));
  const pad = 'p'.repeat(16 * 1024);
  const flood = await attack('ask', {
    method: 'session/request_permission',
    params: { ...permission(sessionId), pad },
    count: 500,
    waitFor: 484,
  });
  assert.deepEqual(flood.results, { 'error:-32603:tooManyPendingRequests': 484 });
  assert.equal(flood.sample[0].error.data.maxPendingRequests, 16);
  assert.equal(seen.length, 16);
  assert.equal(refused.length, 1);
  assert.equal(refused[0].data.reason, 'tooManyPendingRequests');
  assert.equal(refused[0].refusedTotal, 1);
  assert.equal(client.status().refusedAgentRequests, 484);
  // The host still answers, and after cancel() the agent may ask again.
  assert.equal(await client.cancel(sessionId), 16);
  const again = await attack('ask', {
    method: 'session/request_permission',
    params: permission(sessionId),
    count: 4,
    waitFor: 0,
  });
  assert.equal(again.answered, 0);
  await eventually(() => seen.length === 20, 'requests taken in again after the cancel');
  client.kill();
});

test('a handler that awaits a call on the same client does not deadlock, even at the cap', async () => {
  let client;
  const answers = [];
  ({ client } = await session({
    maxPendingAgentRequests: 1,
    handlers: {
      'session/request_permission': async () => {
        // A round trip to the same agent from inside the handler.
        const held = await client.request('_attack/hold', {});
        answers.push(held);
        return { outcome: { outcome: 'selected', optionId: 'allow' } };
      },
    },
  }));
  const { sessionId } = await client.newSession({ cwd: process.cwd() });
  const result = await client.request('_attack/ask', {
    method: 'session/request_permission',
    params: permission(sessionId),
    count: 8,
  });
  assert.equal(result.answered, 8);
  // Whatever was over the cap of 1 was refused, never left hanging.
  const selected = result.results['outcome:selected:allow'] ?? 0;
  const refusedCount = result.results['error:-32603:tooManyPendingRequests'] ?? 0;
  assert.equal(selected + refusedCount, 8);
  assert.ok(selected >= 1);
  assert.equal(answers.length, selected);
  client.kill();
});

test('a request with "id": null is answered, with the id null', async () => {
  const { client, attack } = await session({ handlers: { '_x/ping': () => ({ pong: 1 }) } });
  const held = await attack('hold', { before: ['{"jsonrpc":"2.0","id":null,"method":"_x/ping","params":{}}'] });
  assert.deepEqual(held, { held: true });
  // The agent has no request of its own with id null: ask it what came back
  // through a request that is answered after ours.
  const echo = await attack('ask', { method: '_x/ping', params: {}, count: 1 });
  assert.deepEqual(echo.results, { result: 1 });
  const history = client.history().filter((r) => r.direction === 'send' && r.id === null);
  assert.equal(history.length, 1);
  assert.deepEqual(JSON.parse(history[0].payload), { jsonrpc: '2.0', id: null, result: { pong: 1 } });
  client.kill();
});

test('a permission optionId with quotes, backslashes or control characters reaches the agent selected', async () => {
  const optionId = 'a"b\\c\u0001d';
  const { client, sessionId, attack } = await session({
    handlers: { 'session/request_permission': () => ({ outcome: { outcome: 'selected', optionId } }) },
  });
  const r = await attack('ask', { method: 'session/request_permission', params: permission(sessionId), count: 1 });
  assert.deepEqual(r.results, { [`outcome:selected:${optionId}`]: 1 });
  client.kill();
});

test('"result" inside the params of a line with our id does not settle our request', async () => {
  const { client, attack } = await session();
  const errors = [];
  client.on('protocolError', (e) => errors.push(e));
  const held = await attack('hold', { before: ['{"jsonrpc":"2.0","id":$ID,"params":{"result":"fake"}}'] });
  assert.deepEqual(held, { held: true });
  assert.equal(errors.length, 1);
  assert.equal(errors[0].kind, 'notJsonRpc');
  client.kill();
});

test('timeoutMs above 2^32-1 does not wrap around', async () => {
  const { client, attack } = await session();
  // Never answered: only a wrapped (1 ms) timeout could fail it.
  const never = client.request('_attack/never', {}, { timeoutMs: 2 ** 32 + 1 });
  let failed;
  never.catch((e) => (failed = e));
  await attack('hold', {});
  await sleep(50);
  assert.equal(failed, undefined);
  client.kill();
  await assert.rejects(never, { code: 'ERR_ACP_CLOSED' });
});

for (const [shape, lineBytes] of [
  ['64 KiB lines', undefined],
  ['empty lines', 1],
])
  test(`stderr waits in the byte budget: a flood of ${shape} while the event loop is busy does not grow the host`, {
    skip: (!linux && 'needs /proc') || (lineBytes === 1 && nativeOnly('200 M stderr lines, one event each')),
  }, async () => {
    const { client, attack } = await session();
    let events = 0;
    client.on('stderr', () => events++);
    const growth = await peakGrowthMB(async () => {
      // One event per line: empty lines are the most events per byte.
      const flood = attack('stderr', { bytes: (lineBytes ? 50 : 200) * 1024 * 1024, lineBytes });
      // Busy: the host does not take deliveries while the agent writes.
      const end = Date.now() + 3000;
      while (Date.now() < end);
      await flood;
    });
    assert.ok(events > 0);
    assert.ok(growth < 100, `host peak RSS grew ${growth.toFixed(0)} MB`);
    client.kill();
  });

test('concurrent reads of a big file of control characters are bounded in flight', {
  skip: (!linux && 'needs /proc') || nativeOnly('40 reads of 4 MiB of control characters'),
}, async () => {
  const tree = tempTree('reads');
  try {
    writeFileSync(join(tree.root, 'ctl.txt'), Buffer.alloc(4 * 1024 * 1024, 1));
    const { client, sessionId, attack } = await session({ fs: true }, tree.root);
    let result;
    const growth = await peakGrowthMB(async () => {
      result = await attack('ask', { method: 'fs/read_text_file', params: { sessionId, path: 'ctl.txt' }, count: 40 });
    });
    assert.deepEqual(result.results, { 'result:big': 40 });
    // Unbounded, 40 reads held ~40 × 52 MB at once.
    assert.ok(growth < 700, `host peak RSS grew ${growth.toFixed(0)} MB`);
    client.kill();
  } finally {
    tree.cleanup();
  }
});

// A built-in job took its request, which aborted the task waiting for
// it; that raised the job's cancel flag, and a reply waiting for room in
// the stdin queue gave up on it: counted as sent, never written.
test('big built-in replies racing for a full stdin queue all arrive (none is lost)', async () => {
  const tree = tempTree('replies');
  try {
    writeFileSync(join(tree.root, 'big.txt'), Buffer.alloc(2 * 1024 * 1024, 0x61));
    // Each answer is larger than the whole queue: the two built-in jobs in
    // flight wait for it to drain, and used to both see it empty, both
    // send, and the second answer was refused and lost (a hang here).
    const { client, sessionId } = await session({ fs: true, maxWriteQueueBytes: 1 << 20 }, tree.root);
    // A race: three rounds make it show (before the fix) most runs.
    for (let round = 0; round < 3; round++) {
      const result = await client.request(
        '_attack/ask',
        { method: 'fs/read_text_file', params: { sessionId, path: 'big.txt' }, count: 40 },
        { timeoutMs: 120_000 },
      );
      assert.deepEqual(result.results, { 'result:big': 40 }, `round ${round}`);
    }
    client.kill();
  } finally {
    tree.cleanup();
  }
});

test('a cancelled write never replaces the file', async () => {
  const tree = tempTree('cancel-write');
  try {
    const file = join(tree.root, 'f.txt');
    const { client, sessionId, attack } = await session({ fs: true }, tree.root);
    const content = 'n'.repeat(8 * 1024 * 1024);
    for (let i = 0; i < 10; i++) {
      writeFileSync(file, 'old');
      const r = await attack('ask', {
        method: 'fs/write_text_file',
        params: { sessionId, path: 'f.txt', content },
        count: 1,
        cancel: true,
      });
      const kind = Object.keys(r.results)[0];
      const size = statSync(file).size;
      if (kind === 'error:-32800:') assert.equal(size, 3, `cancelled, yet replaced (run ${i})`);
      else assert.equal(kind, 'result');
    }
    client.kill();
  } finally {
    tree.cleanup();
  }
});

test('skipping to a line of a huge sparse file stops at the scan budget', {
  skip: !unix && 'sparse files',
}, async () => {
  const tree = tempTree('sparse');
  try {
    const fd = openSync(join(tree.root, 'sparse.bin'), 'w');
    ftruncateSync(fd, 2 ** 40);
    closeSync(fd);
    const { client, sessionId, attack } = await session({ fs: { maxScanBytes: 64 * 1024 * 1024 } }, tree.root);
    const r = await attack('ask', {
      method: 'fs/read_text_file',
      params: { sessionId, path: 'sparse.bin', line: 2 },
      count: 4,
    });
    assert.deepEqual(r.results, { 'error:-32602:scanLimit': 4 });
    client.kill();
  } finally {
    tree.cleanup();
  }
});

test('terminal output respects outputByteLimit after invalid bytes become U+FFFD', {
  skip: !unix && 'uses node as the command',
}, async () => {
  const { client, sessionId, attack } = await session({ terminals: true });
  const create = await attack('ask', {
    method: 'terminal/create',
    params: {
      sessionId,
      command: process.execPath,
      args: ['-e', 'process.stdout.write(Buffer.alloc(2 << 20, 0xff))'],
      outputByteLimit: 1 << 20,
    },
    count: 1,
  });
  const terminalId = create.sample[0].result.terminalId;
  await attack('ask', { method: 'terminal/wait_for_exit', params: { sessionId, terminalId }, count: 1 });
  const out = await attack('ask', { method: 'terminal/output', params: { sessionId, terminalId }, count: 1 });
  assert.deepEqual(out.results, { 'result:big': 1 });
  // The whole answer line: the output (U+FFFD is 3 bytes of UTF-8) plus
  // the envelope. Unbounded, the 1 MiB kept of 0xFF bytes became 3 MiB.
  const bytes = out.sample[0].bytes;
  assert.ok(bytes <= (1 << 20) + 200 && bytes > (1 << 20) - 200, `answer of ${bytes} bytes`);
  client.kill();
});

test('released terminals stop reading: escaped writers do not grow the host', {
  skip: !linux && 'needs /proc and setsid',
}, async () => {
  const marker = `acp-budget-${process.pid}-${Date.now()}`;
  const { client, sessionId, attack } = await session({ terminals: { maxTerminals: 4, maxOutputByteLimit: 16 << 20 } });
  try {
    const growth = await peakGrowthMB(async () => {
      for (let i = 0; i < 20; i++) {
        const create = await attack('ask', {
          method: 'terminal/create',
          params: {
            sessionId,
            command: 'setsid',
            args: ['-f', 'sh', '-c', 'head -c 8388608 /dev/zero; sleep 120', marker],
            outputByteLimit: 8 << 20,
          },
          count: 1,
        });
        const terminalId = create.sample[0].result.terminalId;
        // `setsid -f` returns at once, leaving its writer behind.
        await attack('ask', { method: 'terminal/wait_for_exit', params: { sessionId, terminalId }, count: 1 });
        await attack('ask', { method: 'terminal/release', params: { sessionId, terminalId }, count: 1 });
      }
      // Time for writers to write (unstopped pumps would read it all).
      await sleep(500);
    });
    assert.ok(growth < 100, `host peak RSS grew ${growth.toFixed(0)} MB`);
  } finally {
    client.kill();
    // Each escaped into its own session (and group), with its sleep.
    for (const pid of pidsWithArg(marker)) {
      try {
        process.kill(-pid, 'SIGKILL');
      } catch {
        // gone already
      }
    }
  }
});

test('the output budget of open terminals is shared and refused when spent', {
  skip: !unix && 'uses sleep',
}, async () => {
  const { client, sessionId, attack } = await session({
    terminals: { maxTotalOutputBytes: 3 << 20, maxOutputByteLimit: 2 << 20 },
  });
  const params = { sessionId, command: 'sleep', args: ['30'], outputByteLimit: 2 << 20 };
  const r = await attack('ask', { method: 'terminal/create', params, count: 3 });
  assert.deepEqual(r.results, { result: 2, 'error:-32603:outputBudget': 1 });
  client.kill();
});

test('close() is reported as closed even for an agent that exits on EOF at once', async () => {
  for (let i = 0; i < 10; i++) {
    const client = hostile({}, ['--exit-on-eof']);
    await client.initialize();
    const exit = new Promise((resolve) => client.once('exit', resolve));
    client.close();
    const info = await exit;
    assert.equal(info.reason, 'closed', `run ${i}`);
  }
});
