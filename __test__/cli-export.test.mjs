// `acp-native export`: from a recording (folded by the core, equal to the
// JS reference fold) and from a live agent's session/load replay.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createRequire } from 'node:module';
import { MOCK_AGENT } from './helpers.mjs';
import { canonical } from './fold-gen.mjs';

const require = createRequire(import.meta.url);
const { foldRecording } = require('../lib/session-fold.js');
const CLI = fileURLToPath(new URL('../cli/acp-native.mjs', import.meta.url));

function run(args, input = '') {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, ...args], { stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    const deadline = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(deadline);
      resolve({ code, stdout, stderr });
    });
    child.stdin.end(input);
  });
}

test('export of a recording: Markdown transcript and the JSON state of the JS reference fold', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'acp-native-export-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const out = join(dir, 'session.ndjson');
  const rec = await run(['record', '--out', out, '--', process.execPath, MOCK_AGENT], 'all\ntext:2 tool\n');
  assert.equal(rec.code, 0, rec.stderr);
  // The chat rendered from the view.
  assert.match(rec.stdout, /I will read the file\./);
  assert.match(rec.stdout, /▸ tool Read Makefile \[read\]\n {2}↳ Read Makefile: completed all: build/);
  assert.match(rec.stdout, /\(update: hologram_projection\)/);

  const md = await run(['export', out]);
  assert.equal(md.code, 0, md.stderr);
  assert.match(md.stdout, /^# Fix the build\n/);
  assert.match(md.stdout, /## User\n\nFix the build/);
  assert.match(md.stdout, /## Agent\n\nI will read the file\./);
  assert.match(md.stdout, /\*\*Tool\*\* Read Makefile \(read\): completed\n {2}- `\/repo\/Makefile:3`/);
  assert.match(md.stdout, /chunk0 chunk1 /);
  assert.match(md.stdout, /_Stop reason: end_turn_/);

  const json = await run(['export', '--format', 'json', out]);
  assert.equal(json.code, 0, json.stderr);
  const state = JSON.parse(json.stdout);
  const expected = foldRecording(readFileSync(out, 'utf8'));
  assert.equal(canonical(state), canonical(Object.values(expected.sessions)[0]));
  assert.equal(state.toolCalls.call_read.status, 'completed');
  assert.equal(state.modes.currentModeId, 'plan');
  assert.equal(state.modes.availableModes.length, 2, 'session/new result folded');

  const missing = await run(['export', '--session', 'nope', out]);
  assert.equal(missing.code, 1);
  assert.match(missing.stderr, /no session nope \(sessions: sess_1\)/);
});

test('export --load: the agent replays the session into a view', async () => {
  const res = await run(['export', '--load', 'old-1', '--format', 'json', '--', process.execPath, MOCK_AGENT]);
  assert.equal(res.code, 0, res.stderr);
  const state = JSON.parse(res.stdout);
  assert.equal(state.sessionId, 'old-1');
  assert.deepEqual(
    state.entries.map((e) => [e.kind, e.content[0].text]),
    [
      ['user', 'earlier question'],
      ['agent', 'earlier answer'],
    ],
  );
});

test('export usage errors', async () => {
  const bad = await run(['export', '--format', 'pdf', 'x']);
  assert.equal(bad.code, 2);
  const none = await run(['export']);
  assert.equal(none.code, 2);
  assert.match(none.stderr, /needs exactly one recording FILE/);
});

test('export takes the view limits: the transcript is folded within the limits given, what they refused counted', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'acp-native-export-limits-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const out = join(dir, 'session.ndjson');
  const rec = await run(['record', '--out', out, '--', process.execPath, MOCK_AGENT], 'text:3000\n');
  assert.equal(rec.code, 0, rec.stderr);
  const exported = await run(['export', '--format', 'json', out]);
  assert.equal(exported.code, 0, exported.stderr);
  const whole = JSON.parse(exported.stdout);
  const agent = whole.entries.find((e) => e.kind === 'agent');
  assert.ok(agent.content[0].text.length > 20_000 && agent.droppedBytes === undefined);

  const cut = await run(['export', '--format', 'json', '--max-text-bytes', '1000', '--max-entries', '1', out]);
  assert.equal(cut.code, 0, cut.stderr);
  const state = JSON.parse(cut.stdout);
  assert.equal(state.entries.length, 1);
  assert.equal(state.droppedEntries, whole.entries.length - 1);
  const last = state.entries[0];
  assert.ok(last.content[0].text.length <= 1000 && last.droppedBytes > 0, 'what the limit refused is counted');
  assert.equal(canonical(state), canonical(Object.values(foldRecording(readFileSync(out, 'utf8'), { maxTextBytes: 1000, maxEntries: 1 }).sessions)[0]));

  const loaded = await run(['export', '--load', 'old-1', '--max-entries', '1', '--format', 'json', '--', process.execPath, MOCK_AGENT]);
  assert.equal(loaded.code, 0, loaded.stderr);
  assert.deepEqual(JSON.parse(loaded.stdout).entries.map((e) => e.kind), ['agent']);

  for (const bad of ['0', '-1', '1.5', '4294967296', 'lots']) {
    const res = await run(['export', '--max-total-bytes', bad, out]);
    assert.equal(res.code, 2, bad);
    assert.match(res.stderr, /--max-total-bytes must be a whole number from 1 to 4294967295/);
  }
});
