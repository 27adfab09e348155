// updates(): a real agent's turn consumed as an async iterator, slowly.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { tmpdir } from 'node:os';
import { AcpClient } from '../index.mjs';
import { mockClient, HOSTILE_AGENT, TIME_SCALE } from './helpers.mjs';

test('updates() yields every update of the turn in order, at the consumer pace, and ends with the turn', async () => {
  const client = mockClient({ batchMaxMessages: 16 });
  await client.initialize();
  const { sessionId } = await client.newSession();
  const done = new AbortController();
  const turn = client.prompt({ sessionId, prompt: 'burst:2000 text:2' }).finally(() => done.abort());
  const texts = [];
  let delivered = 0; // updates handed to JS so far
  client.onSessionUpdate(() => void delivered++);
  let maxAhead = 0;
  for await (const { update } of client.updates(sessionId, { signal: done.signal, highWaterMark: 8 })) {
    texts.push(update.content.text);
    // A slow consumer: the agent's output waits in its pipe, not in host memory.
    if (texts.length % 100 === 0) await new Promise((r) => setTimeout(r, 5));
    maxAhead = Math.max(maxAhead, delivered - texts.length);
  }
  assert.equal((await turn).stopReason, 'end_turn');
  assert.equal(texts.length, 2002);
  assert.deepEqual(texts.slice(0, 3), ['b0', 'b1', 'b2']);
  assert.equal(texts[1999], 'b1999');
  // JS holds at most the high-water mark plus the in-flight batches (2 × 16),
  // not the burst; the rest waits in the core's bounded queue and the pipe.
  assert.ok(maxAhead <= 8 + 2 * 16, `JS ran ahead of the consumer by ${maxAhead} updates`);
  await client.close();
});

test('an updates() iterator nobody reads, or a handler that never settles, does not keep close() waiting', {
  timeout: 60_000 * TIME_SCALE,
}, async () => {
  for (const hold of ['iterator', 'handler']) {
    const client = mockClient({ batchMaxMessages: 16 });
    await client.initialize();
    const { sessionId } = await client.newSession();
    let delivered = 0;
    if (hold === 'iterator') {
      // Never read: its buffer fills and holds the batches back.
      const stream = client.updates(sessionId, { highWaterMark: 4 });
      client.onSessionUpdate(() => void delivered++);
      void stream;
    } else {
      client.onSessionUpdate(() => {
        delivered++;
        return new Promise(() => {}); // never settles
      });
    }
    const turn = client.prompt({ sessionId, prompt: 'burst:2000 text:2' });
    while (delivered < 4) await new Promise((r) => setTimeout(r, 10));
    // Held: more batches do not come (the agent blocks on its pipe).
    await new Promise((r) => setTimeout(r, 100));
    assert.ok(delivered < 2000, `${hold}: nothing was held back (${delivered} delivered)`);
    const exit = await client.close();
    assert.equal(exit.reason, 'closed', hold);
    // Settled either way: answered (the agent had finished) or closed.
    await turn.then(
      ({ stopReason }) => assert.equal(stopReason, 'end_turn'),
      (err) => assert.equal(err.code, 'ERR_ACP_CLOSED'),
    );
  }
});

test('updates() ends when its session is closed', { timeout: 60_000 * TIME_SCALE }, async () => {
  const client = mockClient();
  await client.initialize();
  const { sessionId } = await client.newSession();
  const other = (await client.newSession()).sessionId;
  const stream = client.updates(sessionId);
  const otherStream = client.updates(other);
  const next = stream.next();
  await client.closeSession({ sessionId });
  assert.deepEqual(await next, { value: undefined, done: true });
  // Another session's iterator is not ended by it.
  const pending = otherStream.next();
  await client.prompt({ sessionId: other, prompt: 'say:still' });
  assert.equal((await pending).done, false);
  await otherStream.return();
  await client.close();
});

test('after close() an updates() iterator takes nothing new while the agent still floods', {
  timeout: 60_000 * TIME_SCALE,
}, async () => {
  // The core reads the agent for up to closeGraceMs after close(); an
  // iterator nobody reads used to buffer all of it (80k updates, +336 MB).
  const client = new AcpClient({
    command: process.execPath,
    args: [HOSTILE_AGENT],
    batchMaxMessages: 16,
    inFlightBatches: 2,
  });
  await client.initialize();
  const { sessionId } = await client.newSession({ cwd: tmpdir() });
  const stream = client.updates(sessionId, { highWaterMark: 4 });
  let delivered = 0;
  client.onSessionUpdate(() => void delivered++);
  client.request('_attack/updates', { sessionId, count: 1e9, bytes: 2000 }, { timeoutMs: 0 }).catch(() => {});
  while (delivered < 4) await new Promise((r) => setTimeout(r, 10));
  await client.close();
  let buffered = 0;
  for await (const _ of stream) buffered++;
  // What was buffered when close() began: the high-water mark and the
  // batches already in JS (at most inFlightBatches × batchMaxMessages).
  assert.ok(buffered <= 4 + 2 * 16, `${buffered} updates buffered after close()`);
  assert.ok(delivered > buffered, 'the flood went on after close()');
});

test('an updates() iterator made while the client closes, or after, ends at once with nothing', {
  timeout: 60_000 * TIME_SCALE,
}, async () => {
  const client = new AcpClient({ command: process.execPath, args: [HOSTILE_AGENT] });
  await client.initialize();
  const { sessionId } = await client.newSession({ cwd: tmpdir() });
  let delivered = 0;
  client.onSessionUpdate(() => void delivered++);
  client.request('_attack/updates', { sessionId, count: 1e9, bytes: 2000 }, { timeoutMs: 0 }).catch(() => {});
  while (delivered < 4) await new Promise((r) => setTimeout(r, 10));
  const closing = client.close();
  // The core still reads the flood for closeGraceMs: none of it may pile up here.
  let during = 0;
  for await (const _ of client.updates(sessionId)) during++;
  await closing;
  let after = 0;
  for await (const _ of client.updates(sessionId)) after++;
  assert.deepEqual({ during, after }, { during: 0, after: 0 });
});
