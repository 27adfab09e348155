// lib/ against a fake native connection: dispatch, fault isolation and
// acknowledgement, without spawning anything.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AcpClient } from '../index.mjs';
import { fakeOptions, KIND, turn } from './fake-connection.mjs';

const exit = { exitCode: 0, signal: null, stderrTail: '', reason: 'closed' };

const chunk = (i) => ({
  sessionId: 's',
  update: { sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: `${i}` } },
});

// As the core delivers a session/update: its own item kind, no method.
function update(i) {
  return [KIND.sessionUpdate, chunk(i), 0];
}

test('a handler that throws mid-batch loses no item and the batch is acknowledged once', async () => {
  const { options, conns } = fakeOptions();
  const client = new AcpClient(options);
  const conn = conns[0];
  const seen = [];
  const faults = [];
  client.on('handlerError', (_err, where) => faults.push(where));
  client.onSessionUpdate((p) => {
    if (p.update.content.text === '1') throw new Error('render bug');
    seen.push(p.update.content.text);
  });
  client.on('stderr', () => {
    throw new Error('stderr listener bug');
  });
  const call = client.request('_x/y', {});
  const id = conn.calls.find(([name]) => name === 'request') && 1;
  conn.deliver([
    update(0),
    update(1),
    [KIND.host, 'stderr', 'oops\n'],
    // The general form of a notification reaches the same handler.
    [KIND.notification, 'session/update', chunk(2)],
    [KIND.response, id, { jsonrpc: '2.0', id, result: { ok: true } }],
  ]);
  assert.deepEqual(await call, { ok: true });
  assert.deepEqual(seen, ['0', '2']);
  assert.deepEqual(faults, ['session/update', 'stderr listener']);
  await turn();
  assert.equal(conn.acks, 1);
  // A batch that is not even JSON is reported and acknowledged.
  conn.deliverText('[0,"x"');
  await turn();
  assert.equal(conn.acks, 2);
  assert.ok(faults.includes('batch'));
  conn.deliver([[KIND.host, 'exit', exit]]);
  assert.deepEqual(await client.closed, exit);
  assert.ok(
    conn.calls.some(([name]) => name === 'release'),
    'the binding is told the agent is done',
  );
});

test('an async notification handler holds the acknowledgement until it settles (backpressure)', async () => {
  const { options, conns } = fakeOptions();
  const client = new AcpClient(options);
  const conn = conns[0];
  let release;
  client.onSessionUpdate(() => new Promise((r) => (release = r)));
  conn.deliver([update(0)]);
  await turn();
  assert.equal(conn.acks, 0);
  release();
  await turn();
  await turn();
  assert.equal(conn.acks, 1);
  client.kill();
});

test('request handlers get {signal, method, requestId}; a fault answers -32603 without the host message', async () => {
  const { options, conns } = fakeOptions({
    handlers: {
      '_x/ok': (params, ctx) => ({
        got: params,
        method: ctx.method,
        requestId: ctx.requestId,
        aborted: ctx.signal.aborted,
      }),
      '_x/bad': () => {
        throw new TypeError('secret path /home/me');
      },
    },
  });
  const client = new AcpClient(options);
  client.on('handlerError', () => {});
  const conn = conns[0];
  assert.deepEqual(conn.options.hostMethods, ['_x/ok', '_x/bad']);
  conn.deliver([
    [KIND.request, 1, { jsonrpc: '2.0', id: 'srv_1', method: '_x/ok', params: { a: 1 } }],
    [KIND.request, 2, { jsonrpc: '2.0', id: 7, method: '_x/bad', params: {} }],
    [KIND.request, 3, { jsonrpc: '2.0', id: 8, method: '_x/none', params: {} }],
  ]);
  const replies = conn.calls.filter(([name]) => name === 'respond' || name === 'respondError');
  assert.deepEqual(JSON.parse(replies[0][2]), { got: { a: 1 }, method: '_x/ok', requestId: 'srv_1', aborted: false });
  assert.deepEqual(replies[1].slice(0, 3), ['respondError', 2, -32603]);
  assert.doesNotMatch(replies[1][3], /secret/);
  assert.deepEqual(replies[2].slice(0, 3), ['respondError', 3, -32601]);
  client.kill();
});

test("a request handler's signal is made only when read, and is aborted when read after the answer stopped being wanted", async () => {
  // Count the AbortControllers the dispatcher makes: one per agent request
  // costs more than the rest of its dispatch.
  const Original = globalThis.AbortController;
  let made = 0;
  globalThis.AbortController = class extends Original {
    constructor() {
      super();
      made++;
    }
  };
  try {
    const later = {};
    const { options, conns } = fakeOptions({
      handlers: {
        '_x/plain': () => ({ ok: true }),
        '_x/later': (_params, ctx) => new Promise((resolve) => (later[ctx.requestId] = { ctx, resolve })),
      },
    });
    const client = new AcpClient(options);
    const conn = conns[0];
    conn.deliver([
      [KIND.request, 1, { jsonrpc: '2.0', id: 1, method: '_x/plain', params: {} }],
      [KIND.request, 2, { jsonrpc: '2.0', id: 2, method: '_x/later', params: {} }],
      [KIND.request, 3, { jsonrpc: '2.0', id: 3, method: '_x/later', params: {} }],
      [KIND.request, 4, { jsonrpc: '2.0', id: 4, method: '_x/later', params: {} }],
    ]);
    assert.deepEqual(
      conn.calls.filter(([name]) => name === 'respond'),
      [['respond', 1, '{"ok":true}']],
    );
    assert.equal(made, 0, 'no handler read its signal');
    // Read before the cancel: aborted by it, like any AbortSignal.
    const early = later[2].ctx.signal;
    assert.equal(early.aborted, false);
    assert.equal(later[2].ctx.signal, early, 'one signal per request');
    conn.deliver([
      [KIND.requestSettled, 2, 'cancelled'],
      [KIND.requestSettled, 3, 'cancelled'],
    ]);
    assert.equal(early.aborted, true);
    assert.equal(early.reason.code, 'ERR_ACP_ABORTED');
    // First read after the cancel: already aborted, with the same reason.
    assert.equal(later[3].ctx.signal.aborted, true);
    assert.equal(later[3].ctx.signal.reason.code, 'ERR_ACP_ABORTED');
    assert.equal(made, 2);
    // Still running when the agent exits: aborted as closed, read or not.
    conn.deliver([[KIND.host, 'exit', exit]]);
    assert.equal(later[4].ctx.signal.aborted, true);
    assert.equal(later[4].ctx.signal.reason.code, 'ERR_ACP_CLOSED');
    await client.closed;
  } finally {
    globalThis.AbortController = Original;
  }
});

test('vendor cancelled results reach the core; generic code knows no vendor names', async () => {
  const { options, conns } = fakeOptions();
  const client = new AcpClient(options);
  assert.deepEqual(conns[0].options.cancelledResults, { '_agentao.cn/ask_user': '{"outcome":"cancelled"}' });
  client.kill();
});

test('the stderr tail of a timed-out initialize comes from the core', async () => {
  const { options, conns } = fakeOptions();
  const client = new AcpClient(options);
  const conn = conns[0];
  const init = client.initialize();
  const id = conn.calls.find(([name, method]) => name === 'request' && method === 'initialize') && 1;
  conn.deliver([
    [
      KIND.failed,
      id,
      { code: 'ERR_ACP_TIMEOUT', message: 'initialize got no answer', method: 'initialize', timeoutMs: 1 },
    ],
  ]);
  await assert.rejects(init, { code: 'ERR_ACP_TIMEOUT', stderrTail: 'the tail' });
  assert.ok(conn.calls.some(([name]) => name === 'kill'));
});

test('updates(): an async iterator that ends on abort and holds acknowledgements while its buffer is full', async () => {
  const { options, conns } = fakeOptions();
  const client = new AcpClient(options);
  const conn = conns[0];
  const controller = new AbortController();
  const stream = client.updates('s', { signal: controller.signal, highWaterMark: 2 });
  conn.deliver([update(0), update(1), [KIND.notification, 'session/update', { sessionId: 'other', update: {} }]]);
  await turn();
  await turn();
  assert.equal(conn.acks, 0, 'buffer full: the batch waits');
  const first = await stream.next();
  assert.equal(first.value.update.content.text, '0');
  await turn();
  await turn();
  assert.equal(conn.acks, 1, 'room again: acknowledged');
  assert.equal((await stream.next()).value.update.content.text, '1');
  const waiting = stream.next();
  controller.abort();
  assert.deepEqual(await waiting, { value: undefined, done: true });
  client.kill();
});

test('updates(): an abort after the turn still delivers what already arrived; break drops the rest', async () => {
  const { options, conns } = fakeOptions();
  const client = new AcpClient(options);
  const conn = conns[0];
  const controller = new AbortController();
  const got = [];
  const turn = client.request('session/prompt', { sessionId: 's', prompt: [] }).finally(() => controller.abort());
  const loop = (async () => {
    for await (const u of client.updates('s', { signal: controller.signal })) got.push(u.update.content.text);
  })();
  conn.deliver([
    update(0),
    update(1),
    update(2),
    [KIND.response, 1, { jsonrpc: '2.0', id: 1, result: { stopReason: 'end_turn' } }],
  ]);
  await turn;
  await loop;
  assert.deepEqual(got, ['0', '1', '2']);
  const stream = client.updates('s');
  conn.deliver([update(3), update(4)]);
  assert.equal((await stream.next()).value.update.content.text, '3');
  await stream.return();
  assert.deepEqual(await stream.next(), { value: undefined, done: true });
  client.kill();
});

test('for await over updates() ends when the agent exits, after what was buffered', async () => {
  const { options, conns } = fakeOptions();
  const client = new AcpClient(options);
  const conn = conns[0];
  const got = [];
  const loop = (async () => {
    for await (const u of client.updates('s')) got.push(u.update.content.text);
  })();
  conn.deliver([update(0), update(1), [KIND.host, 'exit', exit]]);
  await loop;
  assert.deepEqual(got, ['0', '1']);
});

test('dispose() and Symbol.asyncDispose close the client; closed resolves with the exit', async () => {
  const { options, conns } = fakeOptions();
  const client = new AcpClient(options);
  const disposed = client[Symbol.asyncDispose ?? Symbol.for('nodejs.asyncDispose')]();
  assert.ok(conns[0].calls.some(([name]) => name === 'close'));
  conns[0].deliver([[KIND.host, 'exit', exit]]);
  assert.equal(await disposed, undefined);
  assert.deepEqual(await client.closed, exit);
});

test('batches held for async handlers are not kept once acknowledged (memory stays flat)', async () => {
  // In a child with --expose-gc: 30,000 batches, each held for an async
  // handler. A race against a Promise that settles only at close() kept
  // ~0.4 KB per batch until then (12 MB per 30k); now nothing is kept.
  const { execFileSync } = await import('node:child_process');
  const script = `
    import { AcpClient } from ${JSON.stringify(new URL('../index.mjs', import.meta.url).href)};
    import { fakeOptions, KIND, turn } from ${JSON.stringify(new URL('./fake-connection.mjs', import.meta.url).href)};
    const { options, conns } = fakeOptions();
    const client = new AcpClient(options);
    client.onSessionUpdate(async () => {});
    const item = [KIND.notification, 'session/update', { sessionId: 's', update: {} }];
    const heap = async () => { for (let i = 0; i < 3; i++) { await turn(); globalThis.gc(); } return process.memoryUsage().heapUsed; };
    const round = async (n) => { for (let i = 0; i < n; i++) { conns[0].deliver([item]); if (i % 100 === 99) await turn(); } await turn(); };
    await round(2000);
    const before = await heap();
    await round(30000);
    const after = await heap();
    process.stdout.write(JSON.stringify({ growthMb: (after - before) / 1e6, acks: conns[0].acks }));
  `;
  const out = JSON.parse(
    execFileSync(process.execPath, ['--expose-gc', '--input-type=module', '-e', script], { encoding: 'utf8' }),
  );
  assert.equal(out.acks, 32000, 'every batch acknowledged');
  assert.ok(out.growthMb < 4, `heap grew ${out.growthMb.toFixed(1)} MB over 30,000 held batches`);
});
