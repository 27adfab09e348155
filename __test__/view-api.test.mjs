// The session view API a UI builds on, against the real mock agent:
// `settled()` (everything delivered, no flush loop), `snapshot()` that
// never emits before it returns, `subscribe()` (state and listener at
// once), and a second `client.session()` with other options.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { canonical } from './fold-gen.mjs';
import { MOCK_AGENT, TIME_SCALE } from './helpers.mjs';

const require = createRequire(import.meta.url);
const { AcpClient } = require('../index.js');
const { applyChanges } = require('../lib/session-fold.js');
const { CHANGE_TEXT_BYTES } = require('../lib/session-view.js');

async function heldView(t, options = {}) {
  const client = await AcpClient.connect({ command: process.execPath, args: [MOCK_AGENT] });
  t.after(() => client.kill());
  const { sessionId } = await client.newSession();
  // Emits only when asked: the interval is far off. A view's first change
  // goes out at once (the throttle leads), so one is taken here; after it
  // every change waits, and is the test's to drain.
  const view = client.session(sessionId, { intervalMs: 1_000_000_000, maxTextBytes: 32 << 20, ...options });
  await client.prompt({ sessionId, prompt: 'say:start' });
  await view.settled();
  return { client, sessionId, view };
}

/**
 * Until the view says it holds changes: the core's word that a view changed
 * reaches JS on its own, so it may come a turn after the prompt's answer.
 */
async function changesHeld(view) {
  const until = Date.now() + 10_000 * TIME_SCALE;
  while (!view.pending) {
    // A test that missed its changes fails here instead of spinning.
    assert.ok(Date.now() < until, 'the view never said it holds changes');
    await new Promise((resolve) => setImmediate(resolve));
  }
}

/** The agent's text of every turn, in order (each prompt's reply is its own entry). */
const agentText = (state) =>
  state.entries
    .filter((e) => e.kind === 'agent')
    .map((e) => e.content.map((b) => b.text).join(''))
    .join('');

test('await view.settled(): a backlog past flush()’s cap reaches the copy whole, without a flush loop', {
  timeout: 120_000 * TIME_SCALE,
}, async (t) => {
  const { client, sessionId, view } = await heldView(t);
  const copy = view.snapshot();
  const before = agentText(copy).length;
  let events = 0;
  view.on('change', (c) => {
    events++;
    applyChanges(copy, c);
  });
  // More than flush() emits at once (64 events of CHANGE_TEXT_BYTES).
  const bytes = 70 * CHANGE_TEXT_BYTES;
  await client.prompt({ sessionId, prompt: `big:${bytes}` });
  await changesHeld(view);
  assert.equal(view.pending, true);
  await view.settled();
  assert.ok(events > 64, `${events} events`);
  assert.equal(view.pending, false);
  assert.equal(agentText(copy).length, before + bytes);
  assert.equal(canonical(copy), canonical(view.snapshot()));
  // Nothing pending: resolves; closed: resolves.
  await view.settled();
  view.close();
  await view.settled();
});

test('snapshot() emits nothing before it returns: a listener attached first gets its events after its copy exists, and skips them', async (t) => {
  const { client, sessionId, view } = await heldView(t);
  await client.prompt({ sessionId, prompt: 'text:5' });
  await changesHeld(view);
  assert.equal(view.pending, true);
  // The order of the docs' first example: listener, then snapshot.
  let copy;
  let beforeCopy = 0;
  let events = 0;
  view.on('change', (c) => {
    events++;
    if (copy === undefined) beforeCopy++;
    else copy = applyChanges(copy, c);
  });
  copy = view.snapshot();
  assert.equal(beforeCopy, 0, 'no change event fired inside snapshot()');
  await view.settled();
  assert.equal(beforeCopy, 0);
  assert.ok(events >= 1, 'the changes taken with the snapshot were still emitted');
  await client.prompt({ sessionId, prompt: 'text:3' });
  await view.settled();
  assert.equal(agentText(copy), 'startchunk0 chunk1 chunk2 chunk3 chunk4 chunk0 chunk1 chunk2 ');
  assert.equal(canonical(copy), canonical(view.snapshot()), 'no change applied twice');
});

test('subscribe(): the state and a listener at once; the listener gets only what the state lacks', async (t) => {
  const { client, sessionId, view } = await heldView(t);
  await client.prompt({ sessionId, prompt: 'text:4' });
  await changesHeld(view);
  assert.equal(view.pending, true);
  const seqs = [];
  const { state, unsubscribe } = view.subscribe((c) => {
    seqs.push(c.seq);
    applyChanges(state, c);
  });
  await view.settled();
  assert.deepEqual(seqs, [], 'the changes taken with the state are not given to its listener');
  assert.equal(agentText(state), 'startchunk0 chunk1 chunk2 chunk3 ');
  await client.prompt({ sessionId, prompt: 'text:2' });
  await view.settled();
  assert.equal(seqs.length, 1);
  assert.ok(seqs[0] > 0);
  assert.equal(canonical(state), canonical(view.snapshot()));
  unsubscribe();
  await client.prompt({ sessionId, prompt: 'text:2' });
  await view.settled();
  assert.equal(seqs.length, 1, 'unsubscribed');
  assert.throws(() => view.subscribe('nope'), { code: 'ERR_ACP_INVALID_ARGUMENT', argument: 'listener' });
});

test('client.session() again: the same view for the same or no options, ERR_ACP_INVALID_ARGUMENT naming an option that differs', async (t) => {
  const { client, sessionId, view } = await heldView(t, { maxEntries: 100 });
  assert.equal(client.session(sessionId), view);
  assert.equal(client.session(sessionId, {}), view);
  assert.equal(client.session(sessionId, { maxEntries: 100, intervalMs: 1_000_000_000 }), view);
  for (const [opts, name] of [
    [{ maxEntries: 50 }, 'options.maxEntries'],
    [{ intervalMs: 0 }, 'options.intervalMs'],
    [{ forward: true }, 'options.forward'],
    [{ maxTotalBytes: 1024 }, 'options.maxTotalBytes'],
    [{ setup: { modes: { currentModeId: 'x', availableModes: [] } } }, 'options.setup'],
  ]) {
    assert.throws(() => client.session(sessionId, opts), { code: 'ERR_ACP_INVALID_ARGUMENT', argument: name });
  }
  // Closed: other options open a new view.
  view.close();
  const other = client.session(sessionId, { maxEntries: 50 });
  assert.notEqual(other, view);
  assert.equal(client.session(sessionId, { maxEntries: 50 }), other);
});
