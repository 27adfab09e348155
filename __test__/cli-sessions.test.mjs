// biome-ignore-all lint/suspicious/noControlCharactersInRegex: these tests assert that raw terminal controls are absent
// `acp-native sessions`: the store from the command line, agent text made
// safe for the terminal.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { SessionStore } from '../index.mjs';
import { MOCK_AGENT, mockClient, TIME_SCALE } from './helpers.mjs';

const CLI = fileURLToPath(new URL('../cli/acp-native.mjs', import.meta.url));
const run = (args, input, env = process.env) =>
  new Promise((resolve) => {
    const child = execFile(
      process.execPath,
      [CLI, ...args],
      { timeout: 60_000 * TIME_SCALE, env },
      (err, stdout, stderr) => resolve({ code: err ? err.code : 0, stdout, stderr }),
    );
    if (input !== undefined) child.stdin.end(input);
  });

// Removed once every test of the file is done: a test's own after-hooks
// run in the order they were added, and Windows cannot remove a store
// file before the store that a later hook closes is closed.
const storeDirs = [];
after(() => {
  for (const dir of storeDirs) rmSync(dir, { recursive: true, force: true });
});

async function populated() {
  const dir = mkdtempSync(join(tmpdir(), 'acp-cli-store-'));
  storeDirs.push(dir);
  const store = await SessionStore.open(dir);
  const client = mockClient({ store });
  await client.initialize();
  const { sessionId } = await client.newSession();
  // An escape sequence in the agent's text (a title change, say).
  await client.prompt({ sessionId, prompt: 'say:hello_\u001b]0;pwned\u0007_capybara' });
  await client.close();
  await store.close();
  return dir;
}

test('sessions list, search, show and export', async () => {
  const dir = await populated();
  const list = await run(['sessions', 'list', '--store', dir]);
  assert.equal(list.code, 0, list.stderr);
  assert.match(list.stdout, /^s_[0-9a-f]{32} .* closed {2}mock-agent {2}say:hello_/m);
  assert.doesNotMatch(list.stdout, /\u001b/, 'no raw escape reaches the terminal');
  const [stored] = JSON.parse((await run(['sessions', 'list', '--json', '--store', dir])).stdout);

  const search = await run(['sessions', 'search', 'capybara', '--store', dir]);
  assert.equal(search.code, 0);
  assert.match(search.stdout, /\[capybara\]/);
  assert.doesNotMatch(search.stdout, /\u001b/);
  const none = await run(['sessions', 'search', 'marmot', '--store', dir]);
  assert.equal(none.stdout, '');
  assert.match(none.stderr, /no stored session matches/);

  const show = await run(['sessions', 'show', stored.id, '--store', dir]);
  assert.equal(show.code, 0);
  assert.match(show.stdout, /capybara/);
  assert.doesNotMatch(show.stdout, /\u001b/);

  const out = join(dir, 'export.json');
  const exp = await run(['sessions', 'export', stored.id, '--format', 'json', '--out', out, '--store', dir]);
  assert.equal(exp.code, 0, exp.stderr);
  const exported = JSON.parse(readFileSync(out, 'utf8'));
  assert.equal(exported.session.id, stored.id);
  assert.match(exported.session.view.entries[0].content[0].text, /\u001b\]0;pwned/, 'JSON keeps the text as it was');

  const missing = await run(['sessions', 'show', 's_nope', '--store', dir]);
  assert.equal(missing.code, 1);
  assert.match(missing.stderr, /ERR_ACP_STORE_NOT_FOUND/);
});

test('sessions resume continues a stored session in a chat', async (t) => {
  const dir = await populated();
  const [stored] = JSON.parse((await run(['sessions', 'list', '--json', '--store', dir])).stdout);
  const chat = await run(
    ['sessions', 'resume', stored.id, '--store', dir, '--', process.execPath, MOCK_AGENT, '--no-load'],
    'say:again\n',
  );
  assert.equal(chat.code, 0, chat.stderr);
  assert.match(chat.stdout, /continued as a new agent session/);
  assert.match(chat.stdout, /again/);
  const store = await SessionStore.open(dir);
  t.after(() => store.close());
  const s = await store.get(stored.id);
  const text = s.view.entries
    .filter((e) => e.kind === 'agent')
    .map((e) => e.content[0].text)
    .join('|');
  assert.match(text, /capybara.*again$/);
});

test('chat --save records the session in the store that sessions lists and resumes', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'acp-cli-store-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const env = { ...process.env, ACP_NATIVE_STORE: dir };
  const chat = await run(['chat', '--save', '--', process.execPath, MOCK_AGENT], 'say:saved_walrus\n', env);
  assert.equal(chat.code, 0, chat.stderr);
  assert.match(chat.stdout, /saved_walrus/);
  const list = await run(['sessions', 'list', '--json'], undefined, env);
  assert.equal(list.code, 0, list.stderr);
  const sessions = JSON.parse(list.stdout);
  assert.equal(sessions.length, 1);
  const search = await run(['sessions', 'search', 'saved_walrus'], undefined, env);
  assert.match(search.stdout, /\[saved_walrus\]/);
  // Without --save nothing is recorded.
  await run(['chat', '--', process.execPath, MOCK_AGENT], 'say:unsaved_otter\n', env);
  assert.equal(JSON.parse((await run(['sessions', 'list', '--json'], undefined, env)).stdout).length, 1);
});

test('a bad sessions command is a usage error', async () => {
  const r = await run(['sessions', 'frobnicate']);
  assert.equal(r.code, 2);
  assert.match(r.stderr, /sessions needs one of list, search, show, export, resume/);
});
