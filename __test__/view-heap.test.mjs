// What a UI keeps of a session view's long strings (tool output, diffs,
// message text) lives outside V8's heap: lent to V8 as external strings,
// so the young-generation collections that run while a UI applies a
// backlog move a string header, not the text, on the JS thread.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { setTimeout as sleep } from 'node:timers/promises';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AcpClient, applyChanges } from '../index.mjs';
import { MOCK_AGENT } from './helpers.mjs';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc');
const MB = 1024 * 1024;

async function collect() {
  for (let i = 0; i < 3; i++) {
    gc();
    await sleep(10);
  }
}

/** ASCII terminal-like output of `bytes` bytes, different for each `seed`. */
function output(seed, bytes) {
  let s = '';
  for (let i = 0; s.length < bytes; i++) s += `test case_${seed}_${i} ... ok\n`;
  return s.slice(0, bytes);
}

test("a UI copy's tool outputs of a few KiB are held outside V8's heap, and arrive whole", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'acp-view-heap-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  // 1,000 tool calls, each with 8 KiB of output: 8 MB a UI keeps.
  const calls = 1000;
  const bytes = 8 * 1024;
  const lines = [];
  for (let i = 0; i < calls; i++) {
    lines.push(
      JSON.stringify({ sessionUpdate: 'tool_call', toolCallId: `c${i}`, title: `Run ${i}`, status: 'pending' }),
      JSON.stringify({
        sessionUpdate: 'tool_call_update',
        toolCallId: `c${i}`,
        status: 'completed',
        content: [{ type: 'content', content: { type: 'text', text: output(i, bytes) } }],
      }),
    );
  }
  const file = join(dir, 'updates.ndjson');
  writeFileSync(file, lines.join('\n') + '\n');

  const client = await AcpClient.connect({ command: process.execPath, args: [MOCK_AGENT] });
  t.after(() => client.kill());
  const { sessionId } = await client.newSession();
  const view = client.session(sessionId);
  const { state } = view.subscribe((changes) => applyChanges(state, changes));
  // A runtime without Node-API external strings (sandboxed V8) copies
  // every string: what it lends a 256 KiB message says which this is.
  await collect();
  const start = process.memoryUsage().external;
  await client.prompt({ sessionId, prompt: `big:${256 * 1024}` });
  await view.settled();
  if (process.memoryUsage().external - start < 128 * 1024) {
    t.skip('this runtime has no Node-API external strings');
    return;
  }
  await collect();
  const before = process.memoryUsage();
  await client.prompt({ sessionId, prompt: `updates:${encodeURIComponent(file)}` });
  await view.settled();
  await collect();
  const after = process.memoryUsage();

  // Nothing lost: every output, whole, in the UI's copy.
  const held = Object.values(state.toolCalls).map((c) => c.content[0].content.text);
  assert.equal(held.length, calls);
  for (let i = 0; i < calls; i++) assert.equal(state.toolCalls[`c${i}`].content[0].content.text, output(i, bytes));
  const total = calls * bytes;
  // The texts are external memory, not V8 heap (a copy would be the reverse).
  const external = after.external - before.external;
  const heap = after.heapUsed - before.heapUsed;
  assert.ok(external >= 0.9 * total, `external memory grew ${(external / MB).toFixed(1)} MB for ${total / MB} MB held`);
  assert.ok(heap < 0.5 * total, `V8's heap grew ${(heap / MB).toFixed(1)} MB for ${total / MB} MB held`);
  view.close();
  await client.close();
});
