// A session view's default limits hold a long, busy session whole: 100
// realistic turns (bench/real-turns.mjs `turns`: tool calls, thoughts and
// plans between the chunks of each message, terminal output and diffs)
// from a real agent process, nothing dropped, the same state as the JS
// reference fold with its defaults.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { canonical } from './fold-gen.mjs';
import { turns, REAL } from '../bench/real-turns.mjs';
import { TIME_SCALE } from './helpers.mjs';

const require = createRequire(import.meta.url);
const { AcpClient } = require('../index.js');
const { SessionFold } = require('../lib/session-fold.js');
const FLOOD_AGENT = fileURLToPath(new URL('../bench/flood-agent.mjs', import.meta.url));

test('100 realistic turns fold with the default limits and nothing dropped', {
  timeout: 600_000 * TIME_SCALE,
}, async (t) => {
  const client = await AcpClient.connect({ command: process.execPath, args: [FLOOD_AGENT, '--real', 'turns'] });
  t.after(() => client.kill());
  const { sessionId } = await client.newSession({ cwd: process.cwd() });
  const view = client.session(sessionId);
  const { state, unsubscribe } = view.subscribe(() => {});
  unsubscribe();
  const fold = new SessionFold(sessionId);
  const prompts = turns('turns');
  assert.equal(prompts.length, REAL.turns.prompts);
  assert.equal(prompts.length, 100);
  for (let i = 0; i < prompts.length; i++) {
    fold.promptStarted();
    for (const update of prompts[i]()) fold.applyUpdate(update);
    fold.promptEnded(await client.prompt({ sessionId, prompt: `real:${i}` }));
  }
  const s = view.snapshot();
  assert.equal(state.entries.length, 0);
  assert.ok(s.entries.length > 5000, `${s.entries.length} entries (a tool call between chunks starts a new one)`);
  assert.equal(s.droppedEntries, 0, 'no entry dropped');
  assert.equal(s.droppedKeys, 0, 'no key dropped');
  assert.deepEqual(
    s.entries.filter((e) => e.droppedBytes > 0 || e.droppedBlocks > 0).map((e) => e.index),
    [],
    'no text or block dropped',
  );
  assert.equal(Object.keys(s.toolCalls).length, 100 * 15);
  assert.equal(s.entries[0].index, 0, 'the first entry is still there');
  assert.equal(canonical(s), canonical(fold.toJSON()), 'the same state as the JS fold with its defaults');
});
