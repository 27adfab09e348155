import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AcpClient } from '../index.js';
import { TIME_SCALE } from './helpers.mjs';

// `stderr` events carry one line each, with its `\n`, however the agent
// wrote them: several lines in one write (gemini-cli does), a line in
// pieces across writes, an unterminated last line, an over-long line.

/**
 * Runs `writes` as separate stderr writes, a pause between, then exits. A
 * write is a string, or `[text, n]` for text repeated n times (an argument
 * cannot hold a long line).
 */
function agent(writes) {
  const script = `
    const writes = ${JSON.stringify(writes)}.map((w) => (Array.isArray(w) ? w[0].repeat(w[1]) : w));
    const next = (i) => {
      if (i === writes.length) return process.exit(0);
      process.stderr.write(writes[i], () => setTimeout(() => next(i + 1), 20));
    };
    next(0);`;
  // ref(): no call is pending, and the test waits for the exit.
  return new AcpClient({ command: process.execPath, args: ['-e', script] }).ref();
}

async function stderrEvents(writes) {
  const client = agent(writes);
  const events = [];
  client.on('stderr', (text) => events.push(text));
  await client.closed;
  return events;
}

test('stderr: several lines in one write are several events, a line split across writes is one', {
  timeout: 30_000 * TIME_SCALE,
}, async () => {
  const events = await stderrEvents(['one\ntwo\nthree\n', 'par', 'tial\nfour', '\n\nlast line, no newline']);
  assert.deepEqual(events, ['one\n', 'two\n', 'three\n', 'partial\n', 'four\n', '\n', 'last line, no newline']);
});

test('stderr: a line longer than 64 KiB comes in pieces of 64 KiB or more, never joined with the next', {
  timeout: 30_000 * TIME_SCALE,
}, async () => {
  const long = 'x'.repeat(200 * 1024);
  const events = await stderrEvents([['x', 1000], ['x', 200 * 1024 - 1000], '\nnext\n']);
  assert.equal(events.at(-1), 'next\n');
  const pieces = events.slice(0, -1);
  assert.equal(pieces.join(''), `${long}\n`);
  for (const piece of pieces.slice(0, -1)) {
    assert.ok(piece.length >= 64 * 1024, `a piece of ${piece.length} characters`);
    assert.ok(!piece.includes('\n'));
  }
});

test('stderr: a long line of multi-byte characters is cut between characters, never inside one', {
  timeout: 30_000 * TIME_SCALE,
}, async () => {
  // 3-byte and 4-byte characters: 64 KiB is a multiple of neither.
  const long = '€'.repeat(100_000) + '😀'.repeat(50_000);
  const events = await stderrEvents([['€', 100_000], ['😀', 50_000], '\n']);
  assert.ok(events.length > 2, 'the line came in pieces');
  assert.ok(!events.some((e) => e.includes('\ufffd')), 'no piece holds a replacement character');
  assert.equal(events.join(''), `${long}\n`);
});
