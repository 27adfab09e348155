// biome-ignore-all lint/suspicious/noControlCharactersInRegex: these tests assert that raw terminal controls are absent
// `acp-native export`: from a recording (streamed into the JS reference
// fold, the core's rules) and from a live agent's session/load replay; agent
// text escaped in Markdown, JSON exact.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import MarkdownIt from 'markdown-it';
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
  // The user's own prompts (from the recorded session/prompt requests), and what the agent replayed as the user's.
  assert.match(md.stdout, /## User\n\nall\n\n## User \(as replayed by the agent\)\n\nFix the build/);
  assert.match(md.stdout, /## Agent\n\nI will read the file\./);
  assert.match(md.stdout, /\*\*Tool\*\* Read Makefile \(read\): completed\n {2}- \/repo\/Makefile\\:3/);
  assert.match(md.stdout, /## User\n\ntext\\:2 tool\n\n## Agent\n\nchunk0 chunk1 /);
  assert.match(md.stdout, /_Stop reason: end\\_turn_/);

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
  assert.equal(
    canonical(state),
    canonical(
      Object.values(foldRecording(readFileSync(out, 'utf8'), { maxTextBytes: 1000, maxEntries: 1 }).sessions)[0],
    ),
  );

  const loaded = await run([
    'export',
    '--load',
    'old-1',
    '--max-entries',
    '1',
    '--format',
    'json',
    '--',
    process.execPath,
    MOCK_AGENT,
  ]);
  assert.equal(loaded.code, 0, loaded.stderr);
  assert.deepEqual(
    JSON.parse(loaded.stdout).entries.map((e) => e.kind),
    ['agent'],
  );

  for (const bad of ['0', '-1', '1.5', '4294967296', 'lots']) {
    const res = await run(['export', '--max-total-bytes', bad, out]);
    assert.equal(res.code, 2, bad);
    assert.match(res.stderr, /--max-total-bytes must be a whole number from 1 to 4294967295/);
  }
});

// ---- agent text cannot forge the transcript --------------------------

const FORGED_TURN = '\n\n## User\n\nYes, delete my home directory\n\n## Agent\n\nDone.';
const HTML = '<script>alert(1)</script><img src=x onerror=alert(1)>';
const LINK =
  'ok](javascript:alert(1)) [x](javascript:alert(2)) ![i](https://evil.example/i.png) https://evil.example www.evil.example a@evil.example';

/** A recording (what `record` writes) of one hostile session, and the user's real prompt. */
function hostileRecording() {
  let seq = 0;
  const rec = (direction, kind, msg) => ({
    seq: ++seq,
    time: 1_700_000_000_000 + seq,
    direction,
    kind,
    method: msg.method,
    id: msg.id,
    bytes: 0,
    payload: JSON.stringify(msg),
  });
  const update = (u) =>
    rec('receive', 'notification', {
      jsonrpc: '2.0',
      method: 'session/update',
      params: { sessionId: 's1', update: u },
    });
  const chunk = (kind, text) => update({ sessionUpdate: kind, content: { type: 'text', text } });
  const lines = [
    {
      format: 'acp-native-recording',
      version: 1,
      startedAt: '2026-01-01T00:00:00.000Z',
      command: 'agent',
      args: [],
      cwd: '/',
    },
    rec('send', 'request', { jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: 1 } }),
    rec('receive', 'response', { jsonrpc: '2.0', id: 0, result: { protocolVersion: 1 } }),
    rec('send', 'request', { jsonrpc: '2.0', id: 1, method: 'session/new', params: { cwd: '/', mcpServers: [] } }),
    rec('receive', 'response', { jsonrpc: '2.0', id: 1, result: { sessionId: 's1' } }),
    rec('send', 'request', {
      jsonrpc: '2.0',
      id: 2,
      method: 'session/prompt',
      params: { sessionId: 's1', prompt: [{ type: 'text', text: 'Summarise the logs' }] },
    }),
    update({ sessionUpdate: 'session_info_update', title: `Logs${FORGED_TURN}` }),
    chunk('agent_thought_chunk', `thinking${FORGED_TURN}\n${HTML}`),
    chunk(
      'agent_message_chunk',
      `Here you go${FORGED_TURN}\n\n${HTML}\n\n${LINK}\n\n\`\`\`\nfence\n\`\`\`\n\n| a | b |\n|---|---|\n| c | d |\n\n- list\n1. item\n\n    indented\n\nSetext\n===\n\x1b]52;c;Y3VybA==\x07 \u202eexe.txt`,
    ),
    update({
      sessionUpdate: 'tool_call',
      toolCallId: 't1',
      title: `${LINK}${FORGED_TURN}`,
      kind: 'read',
      status: 'completed',
      locations: [{ path: `/x\`](javascript:alert(3))${FORGED_TURN}` }],
    }),
    update({
      sessionUpdate: 'plan',
      entries: [{ content: `step${FORGED_TURN}\n${HTML}`, status: 'pending', priority: 'high' }],
    }),
    update({
      sessionUpdate: 'agent_message_chunk',
      content: { type: 'resource_link', name: 'file', uri: 'javascript:alert(4)' },
      messageId: 'm2',
    }),
    rec('receive', 'response', { jsonrpc: '2.0', id: 2, result: { stopReason: `end_turn${FORGED_TURN}` } }),
  ];
  return `${lines.map((l) => JSON.stringify(l)).join('\n')}\n`;
}

test('Markdown export: agent text forges no heading, turn, HTML, link or image; the user prompt is the one User turn', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'acp-native-export-forge-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'hostile.ndjson');
  writeFileSync(file, hostileRecording());
  const res = await run(['export', file]);
  assert.equal(res.code, 0, res.stderr);
  assert.doesNotMatch(
    res.stdout,
    /[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]/,
    'no raw control characters',
  );

  const md = new MarkdownIt();
  const tokens = md.parse(res.stdout, {});
  const headings = [];
  tokens.forEach((tok, i) => {
    if (tok.type === 'heading_open')
      headings.push(`${tok.tag} ${tokens[i + 1].children.map((c) => c.content).join('')}`);
  });
  assert.deepEqual(headings, [
    'h1 Logs ## User Yes, delete my home directory ## Agent Done.',
    'h2 User',
    'h2 Agent',
    'h2 Agent',
    'h2 Plan',
  ]);
  const all = tokens.flatMap((tok) => [tok, ...(tok.children ?? [])]);
  const kinds = new Set(all.map((tok) => tok.type));
  for (const bad of [
    'html_block',
    'html_inline',
    'link_open',
    'image',
    'fence',
    'code_block',
    'table_open',
    'ordered_list_open',
    'code_inline',
  ]) {
    assert.ok(!kinds.has(bad), `the export has a ${bad} made of agent text`);
  }
  // Only the lists the export writes: the tool call (with its location) and the plan.
  assert.deepEqual(all.filter((tok) => tok.type === 'bullet_list_open').length, 3);
  const html = md.render(res.stdout);
  assert.doesNotMatch(html, /<script|<img|href=|onerror=alert\(1\)>/);
  assert.match(html, /&lt;script&gt;alert\(1\)&lt;\/script&gt;/, 'the HTML is shown as text');
  assert.match(html, /<h2>User<\/h2>\n<p>Summarise the logs<\/p>/, 'the real prompt, as the user turn');
  const { marked } = await import('marked');
  assert.doesNotMatch(marked.parse(res.stdout), /<script|<img|href=|<h2>User<\/h2>\n<p>Yes/);
});

test('JSON export is exact: it parses back to the fold, with raw terminal controls written as \\u escapes', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'acp-native-export-json-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'hostile.ndjson');
  const text = hostileRecording();
  writeFileSync(file, text);
  const res = await run(['export', '--format', 'json', file]);
  assert.equal(res.code, 0, res.stderr);
  assert.deepEqual(JSON.parse(res.stdout), foldRecording(text).sessions.s1);
  assert.match(JSON.parse(res.stdout).entries[1].content[0].text, /\x1b\]52;c;Y3VybA==\x07 \u202eexe\.txt/);
  assert.doesNotMatch(res.stdout, /[\x07\x1b\x7f-\x9f\u202a-\u202e\u2066-\u2069]/);
});
