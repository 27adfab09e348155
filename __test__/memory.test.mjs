// Memory given back: a closed client (and the process a restart replaced)
// is collected with everything it held, and a view's memory follows what
// it holds, not what was streamed through it. Figures are RSS after a
// forced GC; the bounds are generous multiples, never timings.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { setTimeout as sleep } from 'node:timers/promises';
import { createRequire } from 'node:module';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AcpClient, AgentManager, SessionStore, applyChanges } from '../index.mjs';
import { HOSTILE_AGENT as HOSTILE, MOCK_AGENT } from './helpers.mjs';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc');
const CONNECTION_FACTORY = Symbol.for('acp-native.connectionFactory');
const { native } = createRequire(import.meta.url)('../lib/loader.js');
const MB = 1024 * 1024;

/** Full GCs with turns between (finalizers run, then what they freed goes). */
async function collect() {
  for (let i = 0; i < 4; i++) {
    gc();
    await sleep(20);
  }
  // Freed native memory is handed back to the OS a moment later (src/trim.rs).
  await sleep(150);
  gc();
}

const rssMB = () => process.memoryUsage().rss / MB;

/** A client whose native connections are each registered with `registry`. */
function hostile(registry, options = {}) {
  return new AcpClient({
    command: process.execPath,
    args: [HOSTILE, '--exit-on-eof'],
    ...options,
    [CONNECTION_FACTORY]: (nativeOptions, onBatch) => {
      const conn = new native.AgentConnection(nativeOptions, onBatch);
      registry.register(conn, 'native');
      return conn;
    },
  });
}

/** Open a client, fill a view of a session with `mb` MiB of messages, close it. */
async function cycle(registry, mb, check = false) {
  const client = hostile(registry);
  registry.register(client, 'client');
  await client.initialize();
  const { sessionId } = await client.newSession();
  const view = client.session(sessionId, { intervalMs: 0 });
  await client.request('_attack/messages', { sessionId, count: mb, bytes: MB });
  if (check) assert.equal(view.snapshot().entries.length, mb);
  await client.close();
}

test('closed clients are collected with their native connections and views', async () => {
  const collected = { client: 0, native: 0 };
  const registry = new FinalizationRegistry((what) => collected[what]++);
  const clients = 6;
  for (let i = 0; i < clients; i++) await cycle(registry, 8, true);
  await collect();
  assert.deepEqual(collected, { client: clients, native: clients });
});

test('RSS stays flat over open/fill/close cycles with views', async () => {
  const registry = new FinalizationRegistry(() => {});
  const fill = 6;
  for (let i = 0; i < 5; i++) await cycle(registry, fill);
  await collect();
  const warm = rssMB();
  const cycles = 24;
  for (let i = 0; i < cycles; i++) await cycle(registry, fill);
  await collect();
  const growth = rssMB() - warm;
  // Kept, each client would keep its view: cycles × fill (180 MB).
  assert.ok(growth < (cycles * fill) / 6, `RSS grew ${growth.toFixed(1)} MB over ${cycles} cycles of ${fill} MB views`);
});

test('a restart releases the replaced process: its native connection is collected', async () => {
  let natives = 0;
  const registry = new FinalizationRegistry(() => natives++);
  const restarts = 4;
  const client = new AcpClient({
    command: process.execPath,
    args: [MOCK_AGENT],
    restart: { maxRestarts: restarts, windowMs: 600_000, backoffMs: 1 },
    [CONNECTION_FACTORY]: (nativeOptions, onBatch) => {
      const conn = new native.AgentConnection(nativeOptions, onBatch);
      registry.register(conn);
      return conn;
    },
  });
  for (let i = 0; i < restarts; i++) {
    await client.initialize();
    const { sessionId } = await client.newSession();
    const view = client.session(sessionId, { intervalMs: 0 });
    const restarted = once(client, 'restart');
    await assert.rejects(client.prompt({ sessionId, prompt: `big:${4 * MB} crash:3` }), { code: 'ERR_ACP_CLOSED' });
    await restarted;
    view.close();
  }
  await client.initialize();
  await collect();
  // Every replaced process's connection; the current one is in use.
  assert.equal(natives, restarts);
  await client.close();
});

/** One store and one manager serve a client, a recovery, and are closed. */
async function storeRound(dir, i, registry) {
  const store = await SessionStore.open(join(dir, `store${i}`), { intervalMs: 10 });
  const agents = new AgentManager({
    storeDir: join(dir, `agents${i}`),
    index: { version: '1', agents: [] },
    presets: { mock: { command: process.execPath, args: [MOCK_AGENT], name: 'mock' } },
  });
  registry.register(store, 'store');
  registry.register(agents, 'manager');
  const client = await AcpClient.connect({ agent: 'mock', agents, store });
  registry.register(client, 'client');
  const { sessionId } = await client.newSession();
  client.session(sessionId).on('change', () => {});
  await client.prompt({ sessionId, prompt: 'say:kept_then_freed' });
  // The writer commits in batches: listed once flushed.
  await store.flush();
  const [stored] = await store.list();
  await client.close();
  // A recovery too: the store's own client, and its views.
  const { client: resumed } = await store.resume(stored.id);
  registry.register(resumed, 'client');
  await resumed.close();
  await store.flush();
  await store.close();
}

test('a closed SessionStore and a used AgentManager are collected, with the clients they served', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'acp-freed-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const collected = { store: 0, manager: 0, client: 0 };
  const registry = new FinalizationRegistry((what) => collected[what]++);
  const rounds = 3;
  for (let i = 0; i < rounds; i++) await storeRound(dir, i, registry);
  await collect();
  assert.deepEqual(collected, { store: rounds, manager: rounds, client: 2 * rounds });
});

const linux = existsSync('/proc/self/clear_refs');

/** Reset the peak RSS, run `fn`, return the growth of the peak in MB. */
async function peakGrowthMB(fn) {
  const read = (key) =>
    Number(new RegExp(`${key}:\\s+(\\d+)`).exec(readFileSync('/proc/self/status', 'utf8'))[1]) / 1024;
  await collect();
  const base = read('VmRSS');
  writeFileSync('/proc/self/clear_refs', '5');
  await fn();
  return read('VmHWM') - base;
}

test('a view streamed far more than it holds stays near what it holds (with a UI copy)', {
  skip: !linux && 'peak RSS needs Linux',
}, async () => {
  const client = new AcpClient({ command: process.execPath, args: [HOSTILE, '--exit-on-eof'] });
  await client.initialize();
  const { sessionId } = await client.newSession();
  const viewMB = 16;
  const view = client.session(sessionId, { intervalMs: 0, maxTotalBytes: viewMB * MB });
  let copy = view.snapshot();
  view.on('change', (changes) => (copy = applyChanges(copy, changes)));
  // 1 MiB messages (lent to JS as external strings), 20× what the view holds.
  const streamed = 20 * viewMB;
  const growth = await peakGrowthMB(() =>
    client.request('_attack/messages', { sessionId, count: streamed, bytes: MB }, { timeoutMs: 0 }),
  );
  view.flush();
  assert.equal(copy.entries.length, viewMB - 1);
  assert.equal(copy.droppedEntries, streamed - viewMB + 1);
  // docs/limits.md: the view and a UI copy of it, plus V8's slack before
  // external memory makes it collect (see there).
  const bound = 2 * viewMB + 128;
  assert.ok(
    growth < bound,
    `peak RSS grew ${growth.toFixed(0)} MB streaming ${streamed} MB through a ${viewMB} MB view (bound ${bound})`,
  );
  await client.close();
});

/** `_attack/raw` line parts: JSON-RPC head, `[0` then `,0` × `n`, then the tail. */
function zeros(head, n, tail) {
  return { head: `${head}[0`, repeat: ',0', times: n, tail: `]${tail}` };
}

test('one tool_call line with a huge rawInput: the view shows the tool call, rawInput as a marker, and builds no tree of it', {
  skip: !linux && 'peak RSS needs Linux',
}, async () => {
  const client = new AcpClient({ command: process.execPath, args: [HOSTILE, '--exit-on-eof'] });
  await client.initialize();
  const { sessionId } = await client.newSession();
  const view = client.session(sessionId, { intervalMs: 0 });
  const n = 8_000_000; // a 16 MB line: 32 B per element as a parsed tree
  const head = `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"${sessionId}","update":{"sessionUpdate":"tool_call","toolCallId":"big","title":"Big","rawInput":`;
  const growth = await peakGrowthMB(() =>
    client.request('_attack/raw', { lines: [zeros(head, n, '}}}')] }, { timeoutMs: 0 }),
  );
  const snap = view.snapshot();
  assert.deepEqual(
    snap.entries.map((e) => e.kind),
    ['tool_call'],
  );
  assert.deepEqual(snap.toolCalls.big, {
    toolCallId: 'big',
    title: 'Big',
    rawInput: { $omitted: 'size', bytes: 24 * (n + 1) },
  });
  // The line itself is read and held once or twice on its way (16 MB each).
  assert.ok(growth < 96, `peak RSS grew ${growth.toFixed(0)} MB for a 16 MB line`);
  await client.close();
});

test('an agent request awaiting the host with a huge rawInput: a view keeps a marker, no second tree of it', {
  skip: !linux && 'peak RSS needs Linux',
}, async () => {
  const n = 8_000_000;
  const run = async (withView) => {
    let handed;
    const handed$ = new Promise((resolve) => (handed = resolve));
    const client = new AcpClient({
      command: process.execPath,
      args: [HOSTILE, '--exit-on-eof'],
      // The handler takes the params whole (they come cut by default):
      // what is measured is the view's cost on top.
      maxHandlerParamsBytes: Number.POSITIVE_INFINITY,
      // Waits for the user: the request stays pending.
      handlers: {
        'session/request_permission': (params) => (handed(params.toolCall.rawInput.length), new Promise(() => {})),
      },
    });
    await client.initialize();
    const { sessionId } = await client.newSession();
    const view = withView ? client.session(sessionId, { intervalMs: 0 }) : null;
    const head = `{"jsonrpc":"2.0","id":$ID,"method":"session/request_permission","params":{"sessionId":"${sessionId}","options":[{"optionId":"a","name":"Allow","kind":"allow_once"}],"toolCall":{"toolCallId":"big","title":"Big","rawInput":`;
    const growth = await peakGrowthMB(async () => {
      client.request('_attack/raw', { ask: true, lines: [zeros(head, n, '}}}')] }, { timeoutMs: 0 }).catch(() => {});
      assert.equal(await handed$, n + 1, 'the handler gets the whole rawInput');
    });
    const pending = view?.snapshot().pending;
    client.kill();
    await client.closed;
    return { growth, pending };
  };
  const without = await run(false);
  const withView = await run(true);
  assert.deepEqual(
    withView.pending.map((p) => [p.method, p.params.toolCall]),
    [
      [
        'session/request_permission',
        { toolCallId: 'big', title: 'Big', rawInput: { $omitted: 'size', bytes: 24 * (n + 1) } },
      ],
    ],
  );
  // The handler's own params are JS's (V8's parse of the line); the view adds no tree.
  assert.ok(
    withView.growth < without.growth + 64,
    `peak RSS grew ${withView.growth.toFixed(0)} MB with a view, ${without.growth.toFixed(0)} MB without`,
  );
});
