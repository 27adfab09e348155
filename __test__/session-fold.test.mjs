// Property test: the core's fold (Rust, through `foldRecording` of the
// binding) and the plain JS reference fold (lib/session-fold.js) give the
// same state for the same random streams.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { rng, genRecording, genUpdate, genLimits, canonical, entryBytes } from './fold-gen.mjs';

const require = createRequire(import.meta.url);
const { native } = require('../lib/loader.js');
const { foldRecording, SessionFold, toMarkdown, jsonSize } = require('../lib/session-fold.js');

const CASES = 400;

/** One recorded `session/update` of session `s` (a recording's line). */
const update = (u) =>
  JSON.stringify({
    direction: 'receive',
    kind: 'x',
    payload: JSON.stringify({ jsonrpc: '2.0', method: 'session/update', params: { sessionId: 's', update: u } }),
  });

function toText(records) {
  return records.map((r) => JSON.stringify(r)).join('\n');
}

test('Rust and JS folds agree on random streams (every variant, unknowns, lifecycles, limits)', () => {
  let entries = 0;
  let byBytes = 0; // sessions where maxTotalBytes (not maxEntries) evicted
  for (let seed = 1; seed <= CASES; seed++) {
    const r = rng(seed);
    const text = toText(genRecording(r, { messages: 20 + r.int(200) }));
    const limits = genLimits(r);
    const rust = JSON.parse(native.foldRecording(text, limits));
    const js = foldRecording(text, limits);
    for (const s of Object.values(js.sessions)) {
      entries += s.entries.length;
      if (limits?.maxTotalBytes === undefined || s.entries.length === 0) continue;
      // Over the cap only by the entry the last update went into, at the front.
      const bytes = entryBytes(s, jsonSize);
      const rest = bytes.slice(1).reduce((a, b) => a + b, 0);
      assert.ok(
        rest <= limits.maxTotalBytes,
        `seed ${seed}: ${rest} bytes besides the first entry, cap ${limits.maxTotalBytes}`,
      );
      if (limits.maxEntries === 5000 && s.droppedEntries > 0) byBytes++;
    }
    if (canonical(rust) !== canonical(js)) {
      assert.deepEqual(rust, JSON.parse(JSON.stringify(js)), `seed ${seed} limits ${JSON.stringify(limits)}`);
      assert.fail(`seed ${seed}: states differ`);
    }
  }
  // The generator produces non-trivial states, and the byte cap evicts.
  assert.ok(entries > CASES * 5, `only ${entries} entries`);
  assert.ok(byBytes > 20, `maxTotalBytes evicted in only ${byBytes} sessions`);
});

test('the JS fold counts exactly the bytes its entries hold, after every update', () => {
  let evicted = 0;
  for (let seed = 1; seed <= 60; seed++) {
    const r = rng(seed * 31);
    const maxTotalBytes = r.int(2000);
    const fold = new SessionFold('s', { maxTotalBytes });
    for (let i = 0; i < 300; i++) {
      fold.applyUpdate(JSON.parse(JSON.stringify(genUpdate(r))));
      const bytes = entryBytes(fold.toJSON(), jsonSize);
      assert.equal(
        fold.totalBytes,
        bytes.reduce((a, b) => a + b, 0),
        `seed ${seed} update ${i}`,
      );
      assert.ok(fold.totalBytes - (bytes[0] ?? 0) <= maxTotalBytes, `seed ${seed} update ${i}: over the cap`);
    }
    if (fold.droppedEntries > 0) evicted++;
  }
  assert.ok(evicted > 30, `only ${evicted} runs evicted`);
});

test('folds keep every variant: tool-call lifecycle, plan, modes, unknown variants and fields', () => {
  const u = (update) => ({
    direction: 'receive',
    payload: JSON.stringify({ jsonrpc: '2.0', method: 'session/update', params: { sessionId: 's', update } }),
  });
  const records = [
    {
      direction: 'send',
      payload: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'session/prompt',
        params: { sessionId: 's', prompt: [] },
      }),
    },
    u({ sessionUpdate: 'user_message_chunk', content: { type: 'text', text: 'hi' } }),
    u({ sessionUpdate: 'agent_thought_chunk', content: { type: 'text', text: 'hmm' } }),
    u({ sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: 'Hel' } }),
    u({ sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: 'lo' }, vendorField: 1 }),
    u({
      sessionUpdate: 'tool_call',
      toolCallId: 'a',
      title: 'Read',
      kind: 'read',
      status: 'pending',
      rawInput: { path: '/x' },
    }),
    u({ sessionUpdate: 'tool_call_update', toolCallId: 'a', status: 'completed', title: null, rawOutput: 'ok' }),
    u({ sessionUpdate: 'plan', entries: [{ content: 'step', priority: 'high', status: 'pending' }] }),
    u({ sessionUpdate: 'current_mode_update', currentModeId: 'code' }),
    u({ sessionUpdate: 'session_info_update', title: 'T' }),
    u({ sessionUpdate: 'usage_update', used: 5, size: 10 }),
    u({ sessionUpdate: 'brand_new_variant', x: [1] }),
    { direction: 'receive', payload: JSON.stringify({ jsonrpc: '2.0', id: 1, result: { stopReason: 'end_turn' } }) },
  ];
  const text = toText(records);
  const rust = JSON.parse(native.foldRecording(text)).sessions.s;
  const js = foldRecording(text).sessions.s;
  assert.equal(canonical(rust), canonical(js));
  assert.deepEqual(
    rust.entries.map((e) => e.kind),
    ['user', 'thought', 'agent', 'tool_call', 'unknown'],
  );
  assert.deepEqual(rust.entries[2].content, [{ type: 'text', text: 'Hello' }]);
  assert.deepEqual(rust.entries[2].extra, { vendorField: 1 });
  assert.deepEqual(rust.toolCalls.a, {
    toolCallId: 'a',
    title: 'Read',
    kind: 'read',
    status: 'completed',
    rawInput: { path: '/x' },
    rawOutput: 'ok',
  });
  assert.deepEqual(rust.entries[4].update, { sessionUpdate: 'brand_new_variant', x: [1] });
  assert.equal(rust.modes.currentModeId, 'code');
  assert.equal(rust.info.title, 'T');
  assert.deepEqual(rust.usage, { used: 5, size: 10 });
  assert.equal(rust.stopReason, 'end_turn');
  assert.equal(rust.running, false);
  const md = toMarkdown(rust);
  assert.match(md, /^# T/);
  assert.match(md, /## Agent\n\nHello/);
  assert.match(md, /\*\*Tool\*\* Read \(read\): completed/);
});

test('limits bound a view: entries, text bytes, blocks, keys', () => {
  const fold = new SessionFold('s', { maxEntries: 2, maxTextBytes: 4, maxBlocks: 1, maxKeys: 1 });
  fold.applyUpdate({ sessionUpdate: 'tool_call', toolCallId: 'a', title: 't' });
  fold.applyUpdate({ sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: 'abcd' } });
  fold.applyUpdate({ sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: 'e' } });
  fold.applyUpdate({ sessionUpdate: 'agent_message_chunk', content: { type: 'image', data: '' } });
  fold.applyUpdate({ sessionUpdate: 'user_message_chunk', content: { type: 'text', text: 'x' } });
  fold.applyUpdate({ sessionUpdate: 'session_info_update', title: 'a', updatedAt: 'b' });
  const s = fold.toJSON();
  assert.equal(s.droppedEntries, 1);
  assert.deepEqual(s.toolCalls, {}, 'the dropped entry took its tool call along');
  assert.deepEqual(s.entries[0], {
    index: 1,
    kind: 'agent',
    content: [{ type: 'text', text: 'abcd' }],
    droppedBytes: 1,
    droppedBlocks: 1,
  });
  assert.deepEqual(s.info, {});
  assert.equal(s.droppedKeys, 3, 'the title of the tool call and both info keys');
});

test('the JS fold takes values nested deeper than the call stack (an agent picks the depth)', () => {
  const deep = [];
  let at = deep;
  for (let i = 0; i < 100_000; i++) at = at[at.push([]) - 1];
  const fold = new SessionFold('s');
  fold.applyUpdate({ sessionUpdate: 'x_deep', value: deep });
  fold.applyUpdate({ sessionUpdate: 'tool_call', toolCallId: 'a', rawOutput: deep });
  fold.applyUpdate({ sessionUpdate: 'agent_message_chunk', messageId: deep, content: { type: 'text', text: 'a' } });
  fold.applyUpdate({ sessionUpdate: 'agent_message_chunk', messageId: deep, content: { type: 'text', text: 'b' } });
  const state = fold.toJSON();
  assert.equal(state.entries.length, 3);
  assert.equal(state.entries[2].content[0].text, 'ab', 'the same (deep) messageId continues the message');
  // 100,000 arrays nested: one item each, an empty array at the bottom.
  assert.equal(jsonSize(deep), 16 * 100_000);
});

test('keys a chunk adds count before its text is weighed against maxTotalBytes, in both folds', () => {
  const text = [
    update({ sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: 'a'.repeat(50) } }),
    // 30 bytes of text with a 20-byte extra key: the key fits, then the text no longer does.
    update({
      sessionUpdate: 'agent_message_chunk',
      k: 'v'.repeat(20),
      content: { type: 'text', text: 'b'.repeat(30) },
    }),
  ].join('\n');
  const limits = { maxTotalBytes: 100 };
  const rust = JSON.parse(native.foldRecording(text, limits)).sessions.s;
  const js = foldRecording(text, limits).sessions.s;
  assert.equal(canonical(js), canonical(rust));
  assert.equal(rust.entries[0].droppedBytes, 30);
  assert.equal(rust.entries[0].content[0].text, 'a'.repeat(50));
});

test('session-wide objects (info, modes, config, commands, usage) are bounded in bytes too, alike in both folds', () => {
  // maxKeys bounded their keys, not their values: 256 updates of a 64 MiB
  // line under new keys held 16 GiB.
  const lines = [];
  for (let i = 0; i < 300; i++)
    lines.push(update({ sessionUpdate: 'session_info_update', [`k${i}`]: 'v'.repeat(3000) }));
  lines.push(update({ sessionUpdate: 'session_info_update', k0: 'small' }));
  lines.push(update({ sessionUpdate: 'session_info_update', k1: 'w'.repeat(9000) }));
  for (let i = 0; i < 5; i++) lines.push(update({ sessionUpdate: 'usage_update', [`u${i}`]: 'u'.repeat(4000) }));
  const limits = { maxTotalBytes: 10_000 };
  const rust = JSON.parse(native.foldRecording(lines.join('\n'), limits)).sessions.s;
  const js = foldRecording(lines.join('\n'), limits).sessions.s;
  assert.equal(canonical(js), canonical(rust));
  assert.deepEqual(Object.keys(rust.info).sort(), ['k0', 'k1', 'k2']);
  assert.equal(rust.info.k0, 'small');
  assert.equal(rust.info.k1, 'v'.repeat(3000), 'a value past the cap leaves the old one');
  assert.equal(Object.keys(rust.usage).length, 2, 'each object has its own budget');
  assert.equal(rust.droppedKeys, 297 + 1 + 3);
  assert.ok(jsonSize(rust.info) <= limits.maxTotalBytes);
});

test("the client's own mode and config changes fold alike in both folds, under tight limits", () => {
  // Folded as the update an agent would send, but not bounded as one (its
  // two keys are over maxKeys, its size over maxTotalBytes): the merge
  // bounds what it adds.
  const rec = (direction, msg) => JSON.stringify({ direction, kind: 'x', payload: JSON.stringify(msg) });
  const text = [
    update({ sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: 'hi' } }),
    rec('send', { jsonrpc: '2.0', id: 1, method: 'session/set_mode', params: { sessionId: 's', modeId: 'ask' } }),
    rec('receive', { jsonrpc: '2.0', id: 1, result: {} }),
    rec('send', {
      jsonrpc: '2.0',
      id: 2,
      method: 'session/set_config_option',
      params: { sessionId: 's', configId: 'm' },
    }),
    rec('receive', { jsonrpc: '2.0', id: 2, result: { configOptions: [] } }),
  ].join('\n');
  const limits = { maxKeys: 1, maxTotalBytes: 76 };
  const rust = JSON.parse(native.foldRecording(text, limits)).sessions.s;
  const js = foldRecording(text, limits).sessions.s;
  assert.equal(canonical(js), canonical(rust));
  assert.deepEqual(js.modes, { currentModeId: 'ask' });
  assert.deepEqual(js.config, { configOptions: [] });
  assert.deepEqual(
    js.entries.map((e) => e.kind),
    ['agent'],
    'no unknown entry, nothing evicted',
  );
});
