// The chat's renderer remembers tool call titles (for the status lines of
// later updates): an agent that sends tool call after tool call, each with
// a long title, must not grow the CLI's memory without end.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { Renderer } from '../cli/render.mjs';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc');
const MB = 1024 * 1024;

test('tool call titles remembered by the renderer are bounded in number and length', () => {
  let written = 0;
  const renderer = new Renderer({ write: (s) => (written += s.length), isTTY: false });
  gc();
  const before = process.memoryUsage().rss;
  // 20k tool calls with 20 KB titles: 400 MB if every title were kept.
  for (let i = 0; i < 20_000; i++) {
    renderer.update({
      sessionUpdate: 'tool_call',
      toolCallId: `call_${i}`,
      title: `${i} ${'t'.repeat(20 * 1024)}`,
      status: 'pending',
    });
  }
  gc();
  const grown = process.memoryUsage().rss - before;
  assert.ok(grown < 150 * MB, `RSS grew by ${Math.round(grown / MB)} MB`);
  assert.ok(written > 20_000 * 20 * 1024, 'each title was printed whole when first seen');

  // A later update of a recent call still names it.
  let out = '';
  const named = new Renderer({ write: (s) => (out += s), isTTY: false });
  named.update({ sessionUpdate: 'tool_call', toolCallId: 'c', title: 'Read file', status: 'pending' });
  named.update({ sessionUpdate: 'tool_call_update', toolCallId: 'c', status: 'completed' });
  assert.match(out, /↳ Read file: completed/);
});
