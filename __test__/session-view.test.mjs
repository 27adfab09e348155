// Live session views against real agent processes: the mock agent's full
// variant set, random streams through a real pipe (change events applied
// to a copy must equal the snapshot, and the JS reference fold), replays,
// pending permission requests, coalescing and zero-cost opt-out.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { mkdtempSync, readFileSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { rng, genUpdate, canonical, entryBytes, nested } from './fold-gen.mjs';
import { HOSTILE_AGENT, MOCK_AGENT, TIME_SCALE } from './helpers.mjs';

const require = createRequire(import.meta.url);
const { AcpClient } = require('../index.js');
const { SessionFold, applyChanges, jsonSize } = require('../lib/session-fold.js');

const MOCK = MOCK_AGENT;

async function connect(t, extra = {}) {
  const client = await AcpClient.connect({ command: process.execPath, args: [MOCK], ...extra });
  t.after(() => client.kill());
  return client;
}

test('a view folds every stable variant of the mock agent', async (t) => {
  const client = await connect(t);
  const { sessionId, ...setup } = await client.newSession();
  const view = client.session(sessionId, { setup });
  const seen = [];
  client.onSessionUpdate((p) => seen.push(p));
  const result = await client.prompt({ sessionId, prompt: 'all' });
  assert.equal(result.stopReason, 'end_turn');
  assert.equal(seen.length, 0, 'folded updates are not delivered one by one');
  const s = view.snapshot();
  assert.deepEqual(
    s.entries.map((e) => e.kind),
    ['user', 'thought', 'agent', 'tool_call', 'notice', 'compaction', 'agent', 'unknown'],
  );
  assert.deepEqual(s.entries[1].content, [{ type: 'text', text: 'Looking at the logs' }]);
  assert.equal(s.entries[2].messageId, 'msg_1');
  assert.deepEqual(s.entries[2].content, [{ type: 'text', text: 'I will read the file.' }]);
  assert.deepEqual(s.entries[6].extra, { _meta: { vendor: 1 } });
  assert.equal(s.toolCalls.call_1.status, 'completed');
  assert.deepEqual(s.toolCalls.call_1.rawOutput, { bytes: 10 });
  assert.deepEqual(s.toolCalls.call_1.locations, [{ path: '/repo/Makefile', line: 3 }]);
  assert.equal(s.plan.entries.length, 2);
  assert.equal(s.modes.currentModeId, 'plan');
  assert.equal(s.modes.availableModes.length, 2, 'the session/new result seeded the modes');
  assert.equal(s.config.configOptions[0].currentValue, 'fast');
  assert.equal(s.commands.availableCommands[0].name, 'test');
  assert.equal(s.info.title, 'Fix the build');
  assert.equal(s.usage.used, 1200);
  assert.equal(s.compactions.cmp_1.status, 'completed');
  assert.deepEqual(s.entries[5].content, [{ type: 'text', text: 'Summary so far' }]);
  assert.deepEqual(s.entries[7].update, {
    sessionUpdate: 'hologram_projection',
    schema_version: 1,
    beam: { color: 'blue' },
  });
  assert.equal(s.stopReason, 'end_turn');
  assert.equal(s.running, false);
  assert.deepEqual(view.toJSON(), s);
  const md = view.toMarkdown();
  assert.match(md, /^# Fix the build/);
  assert.match(md, /## Agent\n\nI will read the file\./);
});

test('random streams through a real pipe: change events rebuild the snapshot, which equals the JS fold', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'acp-view-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const client = await connect(t);
  for (let seed = 1; seed <= 25; seed++) {
    const r = rng(seed * 7919);
    const updates = Array.from({ length: 50 + r.int(400) }, () => genUpdate(r));
    const file = join(dir, `u${seed}.ndjson`);
    writeFileSync(file, updates.map((u) => JSON.stringify(u)).join('\n') + '\n');
    const limits = r.chance(0.5)
      ? {}
      : { maxEntries: 1 + r.int(10), maxTextBytes: r.int(100), maxBlocks: 1 + r.int(3), maxKeys: 1 + r.int(5) };
    if (seed % 2 === 0) limits.maxTotalBytes = r.int(1500);
    const { sessionId } = await client.newSession();
    const view = client.session(sessionId, { intervalMs: seed % 3 === 0 ? 5 : 0, ...limits });
    const mirror = view.snapshot();
    let changes = 0;
    view.on('change', (c) => {
      changes++;
      applyChanges(mirror, c);
    });
    await client.prompt({ sessionId, prompt: `updates:${encodeURIComponent(file)}` });
    view.flush();
    const snap = view.snapshot();
    assert.equal(canonical(mirror), canonical(snap), `seed ${seed}: applied changes differ from the snapshot`);
    const fold = new SessionFold(sessionId, limits);
    fold.promptStarted();
    for (const u of updates) fold.applyUpdate(JSON.parse(JSON.stringify(u)));
    fold.promptEnded({ stopReason: 'end_turn' });
    assert.equal(canonical(snap), canonical(fold.toJSON()), `seed ${seed}: view differs from the JS fold`);
    assert.ok(changes >= 1);
    view.close();
  }
});

test('wrong shapes: a tool call nested deeper than 128 and lone or split surrogates are folded, as the JS fold does', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'acp-view-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const client = await connect(t);
  const deep = nested(200, 'x');
  const updates = [
    {
      sessionUpdate: 'tool_call',
      toolCallId: 'deep',
      title: 'Hidden?',
      status: 'pending',
      rawInput: { path: 'a', deep },
    },
    { sessionUpdate: 'tool_call', toolCallId: 'deeper', title: 'Hidden?', rawInput: deep },
    { sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: 'lone \ud800 end, ' } },
    { sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: 'split \ud83d' } },
    { sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: '\ude00 pair' } },
    { sessionUpdate: 'tool_call_update', toolCallId: 'deep', status: 'completed', rawOutput: { '\udc00': 'k' } },
  ];
  const file = join(dir, 'shapes.ndjson');
  writeFileSync(file, updates.map((u) => JSON.stringify(u)).join('\n') + '\n');
  const { sessionId } = await client.newSession();
  const view = client.session(sessionId, { intervalMs: 0 });
  await client.prompt({ sessionId, prompt: `updates:${encodeURIComponent(file)}` });
  const snap = view.snapshot();
  assert.deepEqual(
    snap.entries.map((e) => e.kind),
    ['tool_call', 'tool_call', 'agent'],
  );
  const depth = { $omitted: 'depth', bytes: jsonSize(deep) };
  assert.deepEqual(snap.toolCalls.deep, {
    toolCallId: 'deep',
    title: 'Hidden?',
    status: 'completed',
    rawInput: { path: 'a', deep: depth },
    rawOutput: { '\ufffd': 'k' },
  });
  assert.deepEqual(snap.toolCalls.deeper.rawInput, depth);
  assert.equal(snap.entries[2].content[0].text, 'lone \ufffd end, split \ufffd\ufffd pair');
  const fold = new SessionFold(sessionId);
  fold.promptStarted();
  for (const u of updates) fold.applyUpdate(JSON.parse(JSON.stringify(u)));
  fold.promptEnded({ stopReason: 'end_turn' });
  assert.equal(canonical(snap), canonical(fold.toJSON()));
});

test('loadSession replays into the view opened before it', async (t) => {
  const client = await connect(t);
  const view = client.session('old-session');
  await client.loadSession({ sessionId: 'old-session' });
  const s = view.snapshot();
  assert.deepEqual(
    s.entries.map((e) => [e.kind, e.content[0].text]),
    [
      ['user', 'earlier question'],
      ['agent', 'earlier answer'],
    ],
  );
});

test('a permission request waits in the view until the host answers it', {
  timeout: 60_000 * TIME_SCALE,
}, async (t) => {
  let release;
  const answered = new Promise((r) => (release = r));
  let view;
  let pendingWhileAsked;
  const client = await connect(t, {
    handlers: {
      'session/request_permission': async () => {
        try {
          pendingWhileAsked = view.snapshot().pending;
        } catch (err) {
          pendingWhileAsked = err; // fails below instead of waiting forever
        }
        await answered;
        return { outcome: { outcome: 'selected', optionId: 'allow_once' } };
      },
    },
  });
  const { sessionId } = await client.newSession();
  view = client.session(sessionId, { intervalMs: 0 });
  const changes = [];
  view.on('change', (c) => changes.push(c));
  const turn = client.prompt({ sessionId, prompt: 'permission' });
  while (pendingWhileAsked === undefined) await new Promise((r) => setTimeout(r, 5));
  if (pendingWhileAsked instanceof Error) throw pendingWhileAsked;
  assert.equal(pendingWhileAsked.length, 1);
  assert.equal(pendingWhileAsked[0].method, 'session/request_permission');
  assert.equal(pendingWhileAsked[0].params.toolCall.toolCallId, 'call_shell');
  release();
  await turn;
  view.flush();
  const s = view.snapshot();
  assert.deepEqual(s.pending, []);
  assert.equal(s.toolCalls.call_shell.status, 'completed');
  // The list as a difference: one added, then that one removed.
  assert.ok(changes.some((c) => c.pendingAdded?.length === 1));
  assert.ok(changes.some((c) => c.pendingRemoved?.length === 1 && c.pendingRemoved[0] === 0));
});

test('a request the agent withdraws ($/cancel_request) leaves the view at once', async (t) => {
  let asked = false;
  const client = await connect(t, {
    handlers: {
      'session/request_permission': () => {
        asked = true;
        return new Promise(() => {}); // the host never answers
      },
    },
  });
  const { sessionId } = await client.newSession();
  const view = client.session(sessionId, { intervalMs: 0 });
  const changes = [];
  view.on('change', (c) => {
    changes.push(c);
    // Seen waiting: now the agent may take it back (not on a timer: a
    // host paused longer than it would never have seen it waiting).
    if (c.pendingAdded?.length === 1) client.notify('_mock/withdraw', {});
  });
  await client.prompt({ sessionId, prompt: 'withdraw-when-told:session/request_permission' });
  assert.equal(asked, true);
  view.flush();
  // Not only in a snapshot: a change event says it is gone.
  assert.ok(
    changes.some((c) => c.pendingAdded?.length === 1),
    'shown while waiting',
  );
  assert.ok(
    changes.some((c) => c.pendingRemoved?.[0] === 0),
    'a change says it is gone',
  );
  assert.deepEqual(view.snapshot().pending, []);
});

test('changes are coalesced: a 5,000-chunk burst is a handful of change events, text appended', async (t) => {
  const client = await connect(t);
  const { sessionId } = await client.newSession();
  // No interval ends during the burst, however long it takes (under
  // qemu-user, longer than a second): the count shows coalescing, not speed.
  const view = client.session(sessionId, { intervalMs: 2 ** 31 - 1 });
  const changes = [];
  view.on('change', (c) => changes.push(c));
  await client.prompt({ sessionId, prompt: 'burst:5000' });
  view.flush();
  assert.ok(changes.length <= 2, `${changes.length} change events`);
  const text = view.snapshot().entries[0].content[0].text;
  assert.equal(text.length, Array.from({ length: 5000 }, (_, i) => `b${i}`).join('').length);
  assert.ok(text.endsWith('b4999'));
});

test('chunks and a request in one write: the request is traced after every chunk, and finds them in the view', async (t) => {
  // The reader folds and traces a read's text chunks together: anything
  // else in the read must still come after the chunks before it.
  let textAtRequest;
  const client = await connect(t, {
    handlers: {
      '_x/after': () => {
        textAtRequest = view.snapshot().entries[0].content[0].text;
        return { ok: true };
      },
    },
  });
  const { sessionId } = await client.newSession();
  const view = client.session(sessionId, { intervalMs: 1000 });
  await client.prompt({ sessionId, prompt: 'burst:500:_x/after' });
  const all = Array.from({ length: 500 }, (_, i) => `b${i}`).join('');
  assert.equal(textAtRequest, all);
  const received = client.history().filter((r) => r.direction === 'receive');
  const at = received.findIndex((r) => r.method === '_x/after');
  const chunks = received.slice(0, at).filter((r) => r.payload.includes('"agent_message_chunk"'));
  assert.equal(chunks.length, 500, 'every chunk is in the history before the request');
  assert.ok(chunks.at(-1).payload.includes('"b499"'));
  const seqs = client.history().map((r) => r.seq);
  assert.deepEqual(
    seqs,
    [...seqs].sort((a, b) => a - b),
    'the history is in seq order',
  );
  assert.equal(new Set(seqs).size, seqs.length);
  view.flush();
  assert.match(view.snapshot().entries[0].content[0].text, /b499burst=\{.*"result":\{"ok":true\}\}$/);
});

test('small and big chunks in one read fold in wire order (a big one is folded from the line, not copied aside)', async (t) => {
  const client = await connect(t);
  const { sessionId } = await client.newSession();
  const view = client.session(sessionId, { intervalMs: 0 });
  const mirror = view.snapshot();
  view.on('change', (c) => applyChanges(mirror, c));
  await client.prompt({ sessionId, prompt: 'mixed:100:40000 mixed:3:16385 say:end' });
  view.flush();
  const run = (n, big) =>
    [
      ...Array.from({ length: n }, (_, i) => `a${i}`),
      'x'.repeat(big),
      ...Array.from({ length: n }, (_, i) => `z${i}`),
    ].join('');
  const snap = view.snapshot();
  assert.equal(snap.entries.length, 1);
  assert.equal(snap.entries[0].content[0].text, run(100, 40000) + run(3, 16385) + 'end');
  assert.equal(canonical(mirror), canonical(snap));
});

/** A session and its view whose events wait a far-off interval (unless flushed). */
async function heldView(t, limits = {}) {
  const client = await connect(t);
  const { sessionId } = await client.newSession();
  const view = client.session(sessionId, { intervalMs: 1_000_000_000, ...limits });
  return { client, sessionId, view };
}

/**
 * The mock agent streams `updates` (written to a file, one prompt) into a
 * view emitting at once; returns it flushed, with the copy built from its
 * events since open.
 */
async function streamed(t, name, updates) {
  const dir = mkdtempSync(join(tmpdir(), `acp-view-${name}-`));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, `${name}.ndjson`);
  writeFileSync(file, updates.map((u) => JSON.stringify(u)).join('\n') + '\n');
  const client = await connect(t);
  const { sessionId } = await client.newSession();
  const view = client.session(sessionId, { intervalMs: 0 });
  const copy = view.snapshot();
  view.on('change', (c) => applyChanges(copy, c));
  await client.prompt({ sessionId, prompt: `updates:${encodeURIComponent(file)}` });
  view.flush();
  return { client, sessionId, view, copy };
}

test('with a view, interleaved messages fold apart and the history keeps each streamed chunk line as the agent sent it (kept as its text once its envelope is)', async (t) => {
  const updates = [];
  const chunk = (kind, messageId, text) => ({ sessionUpdate: kind, messageId, content: { type: 'text', text } });
  // Three messages interleaved (the envelope changes line to line), then
  // one message's run (the same envelope); escapes, non-ASCII, and some
  // lines over the payload cap.
  for (let i = 0; i < 600; i++) {
    const text = i % 50 === 7 ? 'x'.repeat(5000) : `chunk ${i} "quoted" \\ é 😀 \n`;
    updates.push(chunk(i % 3 === 2 ? 'agent_thought_chunk' : 'agent_message_chunk', `m${i % 3}`, text));
  }
  for (let i = 0; i < 300; i++) updates.push(chunk('agent_message_chunk', 'm9', i % 2 ? `${i}` : ''));
  const { client, sessionId, view, copy } = await streamed(t, 'history', updates);
  // Folded as the JS fold does: interleaved messages kept apart.
  const fold = new SessionFold(sessionId);
  fold.promptStarted();
  for (const u of updates) fold.applyUpdate(structuredClone(u));
  fold.promptEnded({ stopReason: 'end_turn' });
  assert.equal(canonical(view.snapshot()), canonical(fold.toJSON()));
  assert.equal(canonical(copy), canonical(fold.toJSON()));
  const kept = client.history().filter((r) => r.direction === 'receive' && r.method === 'session/update');
  assert.equal(kept.length, updates.length);
  for (const [i, r] of kept.entries()) {
    if (r.truncated) {
      assert.ok(updates[i].content.text.length === 5000 && r.bytes > 4096, `record ${i}`);
      assert.ok(Buffer.byteLength(r.payload) <= 4096 && r.payload.startsWith('{'), `record ${i}`);
      continue;
    }
    assert.equal(Buffer.byteLength(r.payload), r.bytes, `record ${i}`);
    assert.deepEqual(JSON.parse(r.payload).params.update, updates[i], `record ${i}`);
  }
});

test('a copy started from a snapshot taken mid-stream stays exact under the events that follow', async (t) => {
  const { client, sessionId, view } = await heldView(t);
  const fromOpen = view.snapshot();
  let midStream = null;
  view.on('change', (c) => {
    // Each copy its own objects: a copy adopts the new entries it is given.
    applyChanges(fromOpen, structuredClone(c));
    if (midStream !== null) applyChanges(midStream, c);
  });
  // A first event now: the next one waits the whole (far off) interval.
  await client.prompt({ sessionId, prompt: 'say:start' });
  view.flush();
  await client.prompt({ sessionId, prompt: 'text:5' });
  assert.equal(view.pending, true, 'changes wait (the interval is far off)');
  // Taken with changes not emitted yet: they are emitted after it returns
  // (and skipped by the copy, which holds them).
  midStream = view.snapshot();
  await view.settled();
  assert.equal(view.pending, false);
  assert.equal(canonical(fromOpen), canonical(midStream));
  await client.prompt({ sessionId, prompt: 'text:3' });
  view.flush();
  const now = view.snapshot();
  assert.deepEqual(
    now.entries.map((e) => e.content[0].text),
    ['start', 'chunk0 chunk1 chunk2 chunk3 chunk4 ', 'chunk0 chunk1 chunk2 '],
  );
  assert.equal(canonical(midStream), canonical(now), 'no change applied twice');
  assert.equal(canonical(fromOpen), canonical(now));
});

test('snapshot() inside a change listener: the changes it takes follow in order, and a copy of it skips them', async (t) => {
  const { CHANGE_TEXT_BYTES } = require('../lib/session-view.js');
  const { client, sessionId, view } = await heldView(t);
  const inOrder = view.snapshot();
  const seqs = [];
  let inListener = null;
  let takenAt;
  view.on('change', (c) => {
    // Taken at the first event with text, while the rest of the backlog waits.
    if (inListener === null && c.newEntries !== undefined) {
      inListener = view.snapshot();
      takenAt = c.seq;
    } else if (inListener !== null) applyChanges(inListener, c);
  });
  view.on('change', (c) => {
    seqs.push(c.seq);
    applyChanges(inOrder, structuredClone(c));
  });
  // A backlog of several events ($more): the first listener's snapshot
  // takes the rest while the first event is still being emitted.
  await client.prompt({ sessionId, prompt: `big:${3 * CHANGE_TEXT_BYTES}` });
  view.flush();
  while (view.pending) await new Promise((r) => setImmediate(r));
  assert.ok(seqs.length >= 4, `${seqs.length} events`);
  assert.ok(inListener.seq > takenAt, 'the snapshot took changes not emitted yet');
  assert.deepEqual(
    seqs,
    [...seqs].sort((a, b) => a - b),
    'every listener gets the events in drain order',
  );
  const now = view.snapshot();
  assert.equal(canonical(inOrder), canonical(now));
  assert.equal(canonical(inListener), canonical(now), 'the copy taken in the listener skipped what it held');
});

test('a change listener that throws does not take the change from the listeners after it', async (t) => {
  const client = await connect(t);
  const errors = [];
  client.on('handlerError', (e) => errors.push(e));
  const { sessionId } = await client.newSession();
  const view = client.session(sessionId, { intervalMs: 0 });
  view.on('change', () => {
    throw new Error('listener bug');
  });
  const mirror = [];
  view.on('change', (c) => mirror.push(c));
  await client.prompt({ sessionId, prompt: 'say:hello' });
  view.flush();
  assert.ok(mirror.length > 0, 'the second listener got the changes');
  assert.ok(errors.length > 0, 'the throw was reported');
});

test('forward: true delivers the updates one by one as well; a closed view stops folding', async (t) => {
  const client = await connect(t);
  const { sessionId } = await client.newSession();
  const seen = [];
  client.onSessionUpdate((p) => seen.push(p.update.sessionUpdate));
  const view = client.session(sessionId, { forward: true });
  await client.prompt({ sessionId, prompt: 'tool' });
  assert.deepEqual(seen, ['tool_call', 'tool_call_update']);
  assert.equal(view.snapshot().toolCalls.call_read.status, 'completed');
  view.close();
  assert.throws(() => view.snapshot(), /closed/);
  await client.prompt({ sessionId, prompt: 'say:after' });
  assert.equal(seen.length, 3, 'after close, updates are delivered again');
  assert.notEqual(client.session(sessionId), view, 'a new view after close');
});

test('sessions are independent: a view of one session leaves the others alone', async (t) => {
  const client = await connect(t);
  const a = (await client.newSession()).sessionId;
  const b = (await client.newSession()).sessionId;
  const seen = [];
  client.onSessionUpdate((p) => seen.push(p.sessionId));
  const view = client.session(a);
  await Promise.all([
    client.prompt({ sessionId: a, prompt: 'text:3' }),
    client.prompt({ sessionId: b, prompt: 'text:2' }),
  ]);
  assert.deepEqual(seen, [b, b]);
  assert.equal(view.snapshot().entries[0].content[0].text, 'chunk0 chunk1 chunk2 ');
});

test("two sessions' chunks alternating line by line in one read: each view gets its own, the third session's are delivered", async (t) => {
  const client = await connect(t);
  const a = (await client.newSession()).sessionId;
  const b = (await client.newSession()).sessionId;
  const c = (await client.newSession()).sessionId;
  const delivered = [];
  client.onSessionUpdate((p) => delivered.push([p.sessionId, p.update.content.text]));
  const va = client.session(a);
  const vb = client.session(b);
  await client.prompt({ sessionId: a, prompt: `interleave:300:${encodeURIComponent(b)}` });
  await client.prompt({ sessionId: a, prompt: `interleave:3:${encodeURIComponent(c)}` });
  const seq = (p, n) => Array.from({ length: n }, (_, i) => `${p}${i}`).join('');
  assert.deepEqual(
    va.snapshot().entries.map((e) => e.content[0].text),
    [seq('a', 300), seq('a', 3)],
  );
  assert.equal(vb.snapshot().entries[0].content[0].text, seq('b', 300));
  assert.deepEqual(delivered, [
    [c, 'b0'],
    [c, 'b1'],
    [c, 'b2'],
  ]);
});

test('a backlog of text is cut into change events of at most CHANGE_TEXT_BYTES, on char boundaries, and adds up exactly', async (t) => {
  const { CHANGE_TEXT_BYTES } = require('../lib/session-view.js');
  const dir = mkdtempSync(join(tmpdir(), 'acp-view-cap-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  // Multi-byte chars straddle the cuts; quotes, backslashes and newlines
  // are escaped on the wire (the fast path decodes them).
  const pieces = ['ab', 'é', '中文', '😀', '\n', '"q"', '\\', 'x'.repeat(400)];
  const chunk = (kind, i, id) => ({
    sessionUpdate: kind,
    messageId: id,
    content: { type: 'text', text: pieces[i % pieces.length] + pieces[(i * 7) % pieces.length] },
  });
  const updates = [];
  for (let i = 0; i < 8000; i++) updates.push(chunk('agent_message_chunk', i, 'm1'));
  updates.push({ sessionUpdate: 'tool_call', toolCallId: 'c1', title: 'between' });
  for (let i = 0; i < 4000; i++) updates.push(chunk('agent_thought_chunk', i, null));
  for (let i = 0; i < 4000; i++) updates.push(chunk('agent_message_chunk', i + 1, 'm2'));
  const file = join(dir, 'cap.ndjson');
  writeFileSync(file, updates.map((u) => JSON.stringify(u)).join('\n') + '\n');
  const total = updates.reduce((n, u) => n + (u.content ? Buffer.byteLength(u.content.text) : 0), 0);
  assert.ok(total > 4 * CHANGE_TEXT_BYTES, `${total} bytes of text`);

  const client = await connect(t);
  for (const intervalMs of [0, 1000]) {
    const { sessionId } = await client.newSession();
    const view = client.session(sessionId, { intervalMs });
    const mirror = view.snapshot();
    const sizes = [];
    view.on('change', (c) => {
      let bytes = 0;
      for (const a of c.appended ?? []) bytes += Buffer.byteLength(a.text);
      for (const e of c.newEntries ?? []) {
        const last = e.content?.at(-1);
        if (last?.type === 'text' && Object.keys(last).length === 2) bytes += Buffer.byteLength(last.text);
      }
      sizes.push(bytes);
      assert.ok(!('$more' in c) && !('$cut' in c), 'internal keys are not shown');
      applyChanges(mirror, c);
    });
    await client.prompt({ sessionId, prompt: `updates:${encodeURIComponent(file)}` });
    view.flush();
    const snap = view.snapshot();
    assert.equal(
      canonical(mirror),
      canonical(snap),
      `intervalMs ${intervalMs}: applied changes differ from the snapshot`,
    );
    const fold = new SessionFold(sessionId);
    fold.promptStarted();
    for (const u of updates) fold.applyUpdate(JSON.parse(JSON.stringify(u)));
    fold.promptEnded({ stopReason: 'end_turn' });
    assert.equal(canonical(snap), canonical(fold.toJSON()), `intervalMs ${intervalMs}: view differs from the JS fold`);
    assert.ok(Math.max(...sizes) <= CHANGE_TEXT_BYTES, `an event carried ${Math.max(...sizes)} bytes of text`);
    assert.ok(sizes.length >= Math.ceil(total / CHANGE_TEXT_BYTES), `${sizes.length} events for ${total} bytes`);
    view.close();
  }
});

test('a long message is shared with V8, not copied: a copy built from the events stays exact after the view, the agent and GCs are gone', async (t) => {
  const v8 = require('node:v8');
  const vm = require('node:vm');
  v8.setFlagsFromString('--expose-gc');
  const gc = vm.runInNewContext('gc');
  // ASCII (what V8 can be lent) in 2 messages, ~1.3 MB each: drains of
  // the cap share frozen text; what a cut leaves follows from it.
  const updates = [];
  const texts = ['', ''];
  for (let m = 0; m < 2; m++) {
    for (let i = 0; i < 5000; i++) {
      const text = `${m}:${i};`.padEnd(260, 'abcdefghij');
      texts[m] += text;
      updates.push({ sessionUpdate: 'agent_message_chunk', messageId: `m${m}`, content: { type: 'text', text } });
    }
  }
  const { client, view, copy } = await streamed(t, 'lent', updates);
  assert.equal(canonical(copy), canonical(view.snapshot()));
  view.close();
  await client.close();
  for (let i = 0; i < 3; i++) {
    gc();
    await new Promise((r) => setImmediate(r));
  }
  const got = copy.entries.map((e) => e.content.map((b) => b.text).join(''));
  assert.equal(got.length, 2);
  for (let m = 0; m < 2; m++) {
    assert.equal(got[m].length, texts[m].length, `message ${m}: length`);
    assert.ok(got[m] === texts[m], `message ${m}: the text the agent sent`);
  }
});

test('a status flood on a tool call with a 1 MiB rawInput sends the status, not the input, each time (and so for compactions and session info)', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'acp-view-fields-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const write = (name, updates) => {
    const file = join(dir, name);
    writeFileSync(file, updates.map((u) => JSON.stringify(u)).join('\n') + '\n');
    return `updates:${encodeURIComponent(file)}`;
  };
  const input = { path: '/repo/big.txt', content: 'i'.repeat(1 << 20) };
  const first = write('first.ndjson', [
    {
      sessionUpdate: 'tool_call',
      toolCallId: 'call_w',
      title: 'Write',
      kind: 'edit',
      status: 'pending',
      rawInput: input,
    },
    { sessionUpdate: 'compaction_update', compactionId: 'cmp', status: 'running', note: 'n'.repeat(100_000) },
    { sessionUpdate: 'session_info_update', title: 'T'.repeat(100_000), updatedAt: '0' },
  ]);
  const statuses = [];
  for (let i = 0; i < 200; i++) {
    statuses.push({ sessionUpdate: 'tool_call_update', toolCallId: 'call_w', status: `step_${i}` });
    if (i % 4 === 0) statuses.push({ sessionUpdate: 'session_info_update', updatedAt: String(i) });
  }
  statuses.push({ sessionUpdate: 'compaction_update', compactionId: 'cmp', status: 'completed' });
  const flood = write('flood.ndjson', statuses);

  const client = await connect(t);
  const { sessionId } = await client.newSession();
  const view = client.session(sessionId, { intervalMs: 0 });
  const mirror = view.snapshot();
  const events = [];
  view.on('change', (c) => {
    events.push(c);
    applyChanges(mirror, c);
  });
  await client.prompt({ sessionId, prompt: first });
  view.flush();
  assert.equal(events.flatMap((c) => Object.keys(c.toolCalls ?? {})).join(), 'call_w', 'new: whole');
  const before = events.length;
  await client.prompt({ sessionId, prompt: flood });
  view.flush();
  const later = events.slice(before);
  assert.ok(later.length > 0);
  for (const c of later) {
    assert.equal(c.toolCalls, undefined, 'never whole again');
    assert.equal(c.compactions, undefined);
    for (const fields of Object.values(c.toolCallFields ?? {})) assert.deepEqual(Object.keys(fields), ['status']);
    if (c.info !== undefined) assert.deepEqual(Object.keys(c.info), ['updatedAt']);
  }
  const sent = later.reduce((n, c) => n + JSON.stringify(c).length, 0);
  assert.ok(sent < 64 * 1024, `${sent} bytes of change events for ${statuses.length} status updates`);
  const s = view.snapshot();
  assert.equal(s.toolCalls.call_w.status, 'step_199');
  assert.equal(s.toolCalls.call_w.rawInput.content.length, 1 << 20);
  assert.equal(s.compactions.cmp.status, 'completed');
  assert.equal(s.info.title.length, 100_000);
  assert.equal(s.info.updatedAt, '196');
  assert.equal(canonical(mirror), canonical(s), 'applied changes equal the snapshot');
});

test('maxTotalBytes bounds a view: big unknown updates and tool outputs push the oldest entries out', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'acp-view-total-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const cap = 256 * 1024;
  const updates = [];
  for (let i = 0; i < 120; i++) {
    updates.push({ sessionUpdate: 'x_blob', seq: i, data: 'b'.repeat(20000 + i) });
    if (i % 3 === 0) {
      const toolCallId = `call_${i}`;
      updates.push({ sessionUpdate: 'tool_call', toolCallId, title: 'Run', kind: 'execute', status: 'in_progress' });
      // The output streams by replacement: counted once, at its last size.
      for (const n of [10000, 30000])
        updates.push({ sessionUpdate: 'tool_call_update', toolCallId, rawOutput: { stdout: 'o'.repeat(n) } });
      updates.push({ sessionUpdate: 'tool_call_update', toolCallId, status: 'completed' });
    }
    updates.push({ sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: `step ${i} ` } });
  }
  // One message bigger than the cap: no entry grows past it (the rest is dropped, counted).
  for (let i = 0; i < 10; i++)
    updates.push({
      sessionUpdate: 'agent_message_chunk',
      messageId: 'big',
      content: { type: 'text', text: 'x'.repeat(65536) },
    });
  const file = join(dir, 'total.ndjson');
  writeFileSync(file, updates.map((u) => JSON.stringify(u)).join('\n') + '\n');
  const sent = updates.reduce((n, u) => n + Buffer.byteLength(JSON.stringify(u)), 0);
  assert.ok(sent > 10 * cap, `${sent} bytes sent`);

  const client = await connect(t);
  const { sessionId } = await client.newSession();
  const view = client.session(sessionId, { intervalMs: 0, maxTotalBytes: cap });
  const mirror = view.snapshot();
  const removals = [];
  view.on('change', (c) => {
    if (c.firstIndex !== undefined) removals.push(c);
    applyChanges(mirror, c);
  });
  await client.prompt({ sessionId, prompt: `updates:${encodeURIComponent(file)}` });
  view.flush();
  const s = view.snapshot();
  const bytes = entryBytes(s, jsonSize);
  const kept = bytes.reduce((a, b) => a + b, 0);
  assert.ok(kept - bytes[0] <= cap, `${kept} bytes kept, ${bytes[0]} of them the first entry`);
  assert.ok(kept > cap / 2, `${kept} bytes kept: the view is not emptied`);
  // The oldest went (with their tool calls); the newest are all there.
  assert.ok(
    s.entries[0].index > 0 && s.droppedEntries === s.entries[0].index,
    `first ${s.entries[0].index}, dropped ${s.droppedEntries}`,
  );
  assert.equal(s.entries.at(-2).content[0].text, 'step 119 ');
  const big = s.entries.at(-1);
  assert.equal(big.content[0].text.length, 3 * 65536, 'as many chunks as fit in the cap, with the messageId');
  assert.equal(big.droppedBytes, 7 * 65536);
  assert.ok(s.entries.some((e) => e.kind === 'unknown' && e.update.seq === 119));
  assert.ok(!('call_0' in s.toolCalls), 'the first tool call went with its entry');
  assert.deepEqual(
    Object.keys(s.toolCalls).sort(),
    s.entries
      .filter((e) => e.kind === 'tool_call')
      .map((e) => e.toolCallId)
      .sort(),
  );
  for (const call of Object.values(s.toolCalls)) assert.equal(call.rawOutput.stdout.length, 30000);
  assert.ok(
    removals.length > 0 && removals.at(-1).droppedEntries === s.droppedEntries,
    'change events report the removals',
  );
  assert.equal(canonical(mirror), canonical(s), 'applied changes equal the snapshot');
  const fold = new SessionFold(sessionId, { maxTotalBytes: cap });
  fold.promptStarted();
  for (const u of updates) fold.applyUpdate(u);
  fold.promptEnded({ stopReason: 'end_turn' });
  assert.equal(canonical(s), canonical(fold.toJSON()), 'the view equals the JS fold');
});

test('a snapshot bigger than a part comes over in parts: it equals the JS fold, hostile ids and escaped text included', async (t) => {
  // The core hands snapshot() ~1 MiB JSON parts (one JSON text could
  // outgrow V8's string cap: control characters are 6 × longer escaped).
  const updates = [];
  const ids = ['__proto__', 'constructor', 'toString', 'hasOwnProperty'];
  for (let i = 0; i < 200; i++) {
    const toolCallId = ids[i] ?? `call_${i}`;
    updates.push({ sessionUpdate: 'tool_call', toolCallId, title: `Run ${i}`, status: 'in_progress' });
    updates.push({ sessionUpdate: 'tool_call_update', toolCallId, rawOutput: { stdout: 'o'.repeat(8000) } });
    if (i % 7 === 0) updates.push({ sessionUpdate: 'x_blob', seq: i, data: '\u0001'.repeat(60000) });
    if (i % 50 === 0)
      updates.push({ sessionUpdate: 'compaction_update', compactionId: ids[i / 50], status: 'started' });
    updates.push({ sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: `step ${i} \u0002\n` } });
  }
  // The session-wide fields travel as parts of their own.
  updates.push({ sessionUpdate: 'plan', entries: [{ content: 'p\u0003', priority: 'high', status: 'pending' }] });
  updates.push({ sessionUpdate: 'session_info_update', title: 'T\u0004', ['__proto__']: 'x' });
  updates.push({ sessionUpdate: 'usage_update', used: 5, size: 10 });
  updates.push({ sessionUpdate: 'current_mode_update', currentModeId: 'code' });
  updates.push({ sessionUpdate: 'available_commands_update', availableCommands: [{ name: 'c', description: 'd' }] });
  updates.push({ sessionUpdate: 'config_option_update', configOptions: [] });
  const { sessionId, view, copy: mirror } = await streamed(t, 'parts', updates);
  const s = view.snapshot();
  assert.ok(JSON.stringify(s).length > 8 * 1024 * 1024, 'several parts of entries and of tool calls');
  assert.equal(Object.keys(s.toolCalls).length, 200);
  assert.equal(
    Object.getPrototypeOf(s.toolCalls),
    Object.prototype,
    'a tool call named __proto__ is a key, not a prototype',
  );
  assert.equal(Object.getOwnPropertyDescriptor(s.toolCalls, '__proto__')?.value.title, 'Run 0');
  assert.ok(Object.hasOwn(s.compactions, '__proto__') && Object.keys(s.compactions).length === 4);
  assert.deepEqual(
    Object.keys(s),
    Object.keys(new SessionFold(sessionId).toJSON()),
    'the keys in the order of a whole snapshot',
  );
  assert.equal(s.entries.filter((e) => e.kind === 'unknown')[3].update.data, '\u0001'.repeat(60000));
  assert.equal(s.info.title, 'T\u0004');
  assert.ok(Object.hasOwn(s.info, '__proto__') && Object.getPrototypeOf(s.info) === Object.prototype);
  assert.equal(s.usage.used, 5);
  assert.equal(s.plan.entries[0].content, 'p\u0003');
  assert.equal(canonical(mirror), canonical(s), 'applied changes equal the snapshot');
  const fold = new SessionFold(sessionId);
  fold.promptStarted();
  for (const u of updates) fold.applyUpdate(u);
  fold.promptEnded({ stopReason: 'end_turn' });
  assert.equal(canonical(s), canonical(fold.toJSON()), 'the view equals the JS fold');
});

test('an agent flooding huge unknown updates leaves a view at its byte cap', async (t) => {
  const client = await connect(t);
  const { sessionId } = await client.newSession();
  const cap = 1024 * 1024;
  const view = client.session(sessionId, { maxTotalBytes: cap });
  const seen = [];
  client.onSessionUpdate((p) => seen.push(p));
  // 32 MiB of updates no client knows, kept whole but for the cap.
  await client.prompt({ sessionId, prompt: 'flood-unknown:128:262144' });
  const s = view.snapshot();
  const bytes = entryBytes(s, jsonSize);
  assert.ok(bytes.reduce((a, b) => a + b, 0) <= cap, `${bytes.join('+')} bytes kept`);
  assert.equal(s.entries.length, 3, 'as many 256 KiB updates as fit in 1 MiB (with their keys)');
  assert.equal(s.droppedEntries, 125);
  assert.deepEqual(
    s.entries.map((e) => e.update.seq),
    [125, 126, 127],
  );
  assert.equal(seen.length, 0, 'folded, not delivered');
});

test('bad view and updates() options are refused with ERR_ACP_INVALID_ARGUMENT, naming the option', async (t) => {
  const client = await connect(t);
  const { sessionId } = await client.newSession();
  for (const [opts, name] of [
    [{ intervalMs: -1 }, 'options.intervalMs'],
    [{ intervalMs: Infinity }, 'options.intervalMs'],
    [{ intervalMs: 3e9 }, 'options.intervalMs'], // setTimeout would fire it after 1 ms
    [{ maxEntries: 1.5 }, 'options.maxEntries'],
    [{ maxTextBytes: -1 }, 'options.maxTextBytes'],
    [{ maxTotalBytes: 2 ** 32 }, 'options.maxTotalBytes'],
    [{ maxTotalBytes: '64' }, 'options.maxTotalBytes'],
  ]) {
    assert.throws(() => client.session(sessionId, opts), { code: 'ERR_ACP_INVALID_ARGUMENT', argument: name });
  }
  assert.throws(() => client.updates(sessionId, { highWaterMark: 0 }), {
    code: 'ERR_ACP_INVALID_ARGUMENT',
    argument: 'options.highWaterMark',
  });
  assert.throws(() => client.updates(sessionId, { highWaterMark: '8' }), {
    code: 'ERR_ACP_INVALID_ARGUMENT',
    argument: 'options.highWaterMark',
  });
});

test('view.pending: true while a change is due, and after a flush() that stopped at its cap, until the rest is out by itself', {
  timeout: 60_000 * TIME_SCALE,
}, async (t) => {
  const { CHANGE_TEXT_BYTES } = require('../lib/session-view.js');
  const { client, sessionId, view } = await heldView(t, { maxTextBytes: 32 << 20 });
  let text = '';
  let events = 0;
  let whole = () => {};
  let empty = 0;
  view.on('change', (c) => {
    events++;
    if (Object.keys(c).every((k) => k === 'seq')) empty++;
    for (const a of c.appended ?? []) text += a.text;
    for (const e of c.newEntries ?? []) text += e.content.map((b) => b.text).join('');
    whole();
  });
  assert.equal(view.pending, false);
  // A first event now: the next one waits the whole (far off) interval.
  await client.prompt({ sessionId, prompt: 'say:start' });
  view.flush();
  text = '';
  // 70 events' worth of text: a rest of several after a flush(), each
  // drained on a turn of its own.
  const bytes = 70 * CHANGE_TEXT_BYTES - 1000;
  await client.prompt({ sessionId, prompt: `big:${bytes}` });
  assert.equal(view.pending, true, 'a change is due (its interval is far off)');
  const before = events;
  view.flush();
  assert.equal(events - before, 64);
  assert.equal(view.pending, true, 'flush() stopped at its cap');
  // Nothing else wakes the loop now (no agent message, no timer of ours):
  // the rest must not wait for something to (an unref'd immediate did).
  await new Promise((resolve) => {
    whole = () => text.length === bytes && resolve();
  });
  while (view.pending) await new Promise((r) => setImmediate(r));
  assert.ok(events - before > 64);
  assert.equal(empty, 0, 'no event says nothing (a drain after one cut exactly at the end of a text)');
  assert.equal(text.length, bytes);
  assert.equal(view.flush(), null);
  assert.equal(view.pending, false);
  view.close();
  assert.equal(view.pending, false);
});

test('flush() returns while an agent floods faster than the host drains (64 events at most)', {
  timeout: 60_000 * TIME_SCALE,
}, async (t) => {
  const client = await AcpClient.connect({ command: process.execPath, args: [HOSTILE_AGENT] });
  t.after(() => client.kill());
  const { sessionId } = await client.newSession({ cwd: tmpdir() });
  const view = client.session(sessionId, { intervalMs: 1_000_000 });
  let events = 0;
  view.on('change', () => {
    events++;
    // A slow renderer: JS drains slower than the agent floods.
    const until = Date.now() + 5;
    while (Date.now() < until);
  });
  client.request('_attack/updates', { sessionId, count: 1e9, bytes: 4000 }, { timeoutMs: 0 }).catch(() => {});
  // Wait until a backlog is there.
  while (view.snapshot().entries.length < 1000) await new Promise((r) => setTimeout(r, 20));
  // The changes taken with the last snapshot are emitted after it returns.
  await null;
  const before = events;
  const last = view.flush();
  assert.notEqual(last, null, 'something was emitted');
  const emitted = events - before;
  assert.ok(emitted >= 1 && emitted <= 64, `${emitted} events from one flush()`);
});

test('each turn of an agent that sends no messageId starts a new message: live view, JS fold and core fold of its recording, and the export', async (t) => {
  const { foldRecording, foldRecordingNative, toMarkdown } = require('../index.js');
  const client = await connect(t);
  const { sessionId } = await client.newSession();
  const view = client.session(sessionId);
  await client.prompt({ sessionId, prompt: 'say:first' });
  await client.prompt({ sessionId, prompt: 'say:second' });
  const messages = (state) => state.entries.map((e) => [e.kind, e.content.map((b) => b.text).join('')]);
  const expected = [
    ['agent', 'first'],
    ['agent', 'second'],
  ];
  assert.deepEqual(messages(view.snapshot()), expected);

  const dir = mkdtempSync(join(tmpdir(), 'acp-turns-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'history.ndjson');
  await client.saveHistory(file);
  const text = readFileSync(file, 'utf8');
  assert.deepEqual(messages(foldRecording(text).sessions[sessionId]), expected);
  assert.deepEqual(messages(foldRecordingNative(text).sessions[sessionId]), expected);
  const { RecordingFold } = require('../lib/session-fold.js');
  const fold = new RecordingFold();
  for (const line of text.split('\n').filter(Boolean)) fold.push(JSON.parse(line));
  const md = toMarkdown(fold.state(sessionId), { prompts: fold.prompts(sessionId) });
  assert.match(md, /## User\n\nsay\\:first\n\n## Agent\n\nfirst\n\n## User\n\nsay\\:second\n\n## Agent\n\nsecond\n/);
});

/** The length of the longest string in `value` (0 if none). */
function longestString(value) {
  if (typeof value === 'string') return value.length;
  if (value === null || typeof value !== 'object') return 0;
  let most = 0;
  for (const v of Object.values(value)) most = Math.max(most, longestString(v));
  return most;
}

test('long strings of tool calls and blocks (terminal output, diffs, images) reach a copy kept by applyChanges exactly', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'acp-view-apart-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  // Escapes, non-ASCII and astral chars in strings longer than the core
  // keeps inline (they travel apart from the change's JSON).
  const out = (i) => `\u001b[32m   Compiling\u001b[0m crate-${i} "é" 😀 \\ \n`.repeat(80 + i);
  const updates = [
    { sessionUpdate: 'tool_call', toolCallId: 't', title: 'run', rawInput: { command: out(0) } },
    { sessionUpdate: 'agent_message_chunk', messageId: 'm', content: { type: 'text', text: 'hi' } },
  ];
  for (let i = 1; i < 40; i++) {
    updates.push({
      sessionUpdate: 'tool_call_update',
      toolCallId: 't',
      content: [{ type: 'content', content: { type: 'text', text: out(i) } }],
    });
    updates.push({ sessionUpdate: 'agent_message_chunk', messageId: 'm', content: { type: 'text', text: `${i} ` } });
  }
  updates.push({
    sessionUpdate: 'agent_message_chunk',
    messageId: 'm',
    content: { type: 'image', mimeType: 'image/png', data: 'QUJD'.repeat(2000) },
  });
  updates.push({
    sessionUpdate: 'tool_call_update',
    toolCallId: 't',
    status: 'completed',
    content: [{ type: 'diff', path: '/a.rs', oldText: out(3), newText: 'short' }],
    rawOutput: { output: out(5), exitCode: 0 },
  });
  updates.push({ sessionUpdate: 'tool_call', toolCallId: 'u', title: 'read', rawOutput: [out(7), { deep: [out(8)] }] });
  const file = join(dir, 'apart.ndjson');
  writeFileSync(file, updates.map((u) => JSON.stringify(u)).join('\n') + '\n');

  const client = await connect(t);
  for (const intervalMs of [0, 1000]) {
    const { sessionId } = await client.newSession();
    const view = client.session(sessionId, { intervalMs });
    const mirror = view.snapshot();
    let longest = 0;
    view.on('change', (c) => {
      assert.ok(!('$apart' in c), 'internal keys are not shown');
      longest = Math.max(longest, longestString(c.toolCalls), longestString(c.toolCallFields));
      applyChanges(mirror, c);
    });
    await client.prompt({ sessionId, prompt: `updates:${encodeURIComponent(file)}` });
    await view.settled();
    const snap = view.snapshot();
    assert.equal(
      canonical(mirror),
      canonical(snap),
      `intervalMs ${intervalMs}: applied changes differ from the snapshot`,
    );
    const fold = new SessionFold(sessionId);
    fold.promptStarted();
    for (const u of updates) fold.applyUpdate(JSON.parse(JSON.stringify(u)));
    fold.promptEnded({ stopReason: 'end_turn' });
    assert.equal(canonical(snap), canonical(fold.toJSON()), `intervalMs ${intervalMs}: view differs from the JS fold`);
    // The copy started empty: the long strings reached it in changes.
    assert.ok(longest >= 1024, `the longest string of a tool call in a change: ${longest} chars`);
    view.close();
  }
});
