// `acp-native record` and `replay`, driven through pipes (the terminal
// behaviour of the same chat loop is covered by cli-terminal.test.mjs).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { MOCK_AGENT, agentText, reported } from './helpers.mjs';
import { AcpClient } from '../index.mjs';
import { parseArgs, UsageError } from '../cli/args.mjs';
import { Replayer } from '../cli/replay.mjs';

const CLI = fileURLToPath(new URL('../cli/acp-native.mjs', import.meta.url));
// Ctrl-C without a TTY is a SIGINT to the CLI; on Windows kill('SIGINT') terminates it instead.
const NEEDS_SIGINT = {
  skip:
    process.platform === 'win32' &&
    'delivers Ctrl-C as SIGINT, which Windows cannot send to a process (kill() terminates it)',
};

function tempDir(t) {
  const dir = mkdtempSync(join(tmpdir(), 'acp-native-cli-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/**
 * Run the CLI with `input` lines on stdin. `until` (optional) is called
 * with the output so far and may act on the process (e.g. send SIGINT).
 */
function runCli(args, input, { until } = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, ...args], { stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => {
      stdout += d;
      until?.(stdout, child);
    });
    child.stderr.on('data', (d) => (stderr += d));
    // A hung CLI fails the test with what it printed instead of hanging the suite.
    const deadline = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.on('error', reject);
    child.on('close', (code, signal) => {
      clearTimeout(deadline);
      resolve({ code, signal, stdout, stderr });
    });
    child.stdin.end(input);
  });
}

const SCRIPT = 'text:2 thought:1 tool plan big:200000\npermission\n3\next:_agentao.cn/ask_user\nlooks good\n';

test('record writes a header and every wire message, whole, in wire order', async (t) => {
  const dir = tempDir(t);
  const out = join(dir, 'session.ndjson');
  const wireLog = join(dir, 'wire.ndjson');
  const run = await runCli(['record', '--out', out, '--', process.execPath, MOCK_AGENT, '--wire-log', wireLog], SCRIPT);
  assert.equal(run.code, 0, run.stderr);
  assert.match(run.stdout, /permission=.*"optionId":"reject_once"/);
  assert.match(run.stderr, /recorded \d+ messages to/);

  const [head, ...records] = readFileSync(out, 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l));
  assert.equal(head.format, 'acp-native-recording');
  assert.equal(head.command, process.execPath);
  assert.deepEqual(head.args, [MOCK_AGENT, '--wire-log', wireLog]);

  // The agent's own log of what it read and wrote is the ground truth.
  const wire = readFileSync(wireLog, 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l));
  const sent = records.filter((r) => r.direction === 'send').map((r) => r.payload);
  const received = records.filter((r) => r.direction === 'receive').map((r) => r.payload);
  assert.deepEqual(
    sent,
    wire.filter((w) => w.dir === 'in').map((w) => w.line),
  );
  assert.deepEqual(
    received,
    wire.filter((w) => w.dir === 'out').map((w) => w.line),
  );
  assert.ok(
    received.some((p) => p.length > 200_000),
    'the 200 kB update is recorded whole',
  );
  assert.ok(records.every((r) => !r.truncated));

  records.forEach((r, i) => {
    assert.equal(r.seq, i + 1);
    assert.equal(typeof r.time, 'number');
    if (i > 0) assert.ok(r.time >= records[i - 1].time, 'timestamps never go back');
  });
  const kinds = records.map((r) => `${r.direction} ${r.kind} ${r.method ?? ''}`);
  assert.deepEqual(kinds.slice(0, 4), [
    'send request initialize',
    'receive response initialize',
    'send request session/new',
    'receive response session/new',
  ]);
  assert.ok(kinds.includes('receive request session/request_permission'));
  assert.ok(kinds.includes('send response session/request_permission'));
  assert.ok(kinds.includes('send response _agentao.cn/ask_user'));
});

test('a chat against `replay` of a recording shows what the chat against the agent showed', async (t) => {
  const dir = tempDir(t);
  const out = join(dir, 'session.ndjson');
  const live = await runCli(['record', '--out', out, '--', process.execPath, MOCK_AGENT, '--string-ids'], SCRIPT);
  assert.equal(live.code, 0, live.stderr);
  const replayed = await runCli(['chat', '--', process.execPath, CLI, 'replay', out], SCRIPT);
  assert.equal(replayed.code, 0, replayed.stderr);
  assert.equal(replayed.stdout, live.stdout);
  assert.match(replayed.stdout, /ext=.*"id":"srv_0000000000000002".*"text":"looks good"/);
});

/** A recording made by the CLI from a script; returns its path. */
async function record(t, script, agentArgs = [], options) {
  const out = join(tempDir(t), 'session.ndjson');
  const run = await runCli(['record', '--out', out, '--', process.execPath, MOCK_AGENT, ...agentArgs], script, options);
  assert.equal(run.code, 0, run.stderr);
  return out;
}

/** An AcpClient on `acp-native replay file`, collecting updates. */
async function replayClient(t, file, options = {}) {
  const updates = [];
  const client = new AcpClient({
    command: process.execPath,
    args: [CLI, 'replay', file],
    onSessionUpdate: ({ update }) => updates.push(update),
    ...options,
  });
  t.after(() => client.close());
  await client.initialize();
  return { client, updates };
}

test('replay matches requests by method in order, rewrites ids, and errors on requests it has no recording of', async (t) => {
  const file = await record(t, 'say:first\nsay:second\n');
  const { client, updates } = await replayClient(t, file);
  assert.equal(client.agent.agentInfo.name, 'mock-agent');
  const { sessionId } = await client.newSession();
  assert.equal(sessionId, 'sess_1');
  // The live prompt texts are not compared: the first prompt gets the first recorded turn.
  assert.deepEqual(await client.prompt({ sessionId, prompt: 'anything' }), { stopReason: 'end_turn' });
  assert.equal(agentText(updates), 'first');
  await client.prompt({ sessionId, prompt: 'again' });
  assert.equal(agentText(updates), 'firstsecond');
  // No third turn was recorded; nor any session/list.
  await assert.rejects(client.prompt({ sessionId, prompt: 'more' }), (err) => {
    assert.equal(err.code, 'ERR_ACP_RPC');
    assert.equal(err.rpcCode, -32601);
    assert.match(err.message, /no \(more\) session\/prompt requests/);
    return true;
  });
  await assert.rejects(client.listSessions(), { code: 'ERR_ACP_RPC', rpcCode: -32601 });
});

/** Resolves once `check()` holds (polled; a wait, not a timing assertion). */
async function until(check, timeoutMs = 30_000) {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) assert.fail(`condition not met within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

test(
  'replay waits for the live answer to a recorded agent request, and replays a recorded cancel',
  NEEDS_SIGINT,
  async (t) => {
    // Turn 1 asks for permission; turn 2 is cancelled with SIGINT (Ctrl-C without a TTY).
    let interrupted = false;
    const file = await record(t, 'permission say:after\n1\nsay:waiting wait-cancel\n', [], {
      until(out, child) {
        if (!interrupted && /^waiting$/m.test(out)) {
          interrupted = true;
          child.kill('SIGINT');
        }
      },
    });
    const records = readFileSync(file, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    assert.ok(
      records.some((r) => r.direction === 'send' && r.method === 'session/cancel'),
      'the cancel was recorded',
    );

    let updatesWhenAsked;
    const { client, updates } = await replayClient(t, file, {
      handlers: {
        'session/request_permission': () => {
          updatesWhenAsked = agentText(updates);
          return { outcome: { outcome: 'selected', optionId: 'reject_once' } };
        },
      },
    });
    const { sessionId } = await client.newSession();
    assert.deepEqual(await client.prompt({ sessionId, prompt: 'x' }), { stopReason: 'end_turn' });
    assert.equal(updatesWhenAsked, '');
    // The recorded answer (allow_once) is what the rest of the recording shows.
    assert.equal(reported(updates, 'permission').result.outcome.optionId, 'allow_once');
    assert.match(agentText(updates), /after$/);

    const second = client.prompt({ sessionId, prompt: 'y' });
    await until(() => /waiting$/.test(agentText(updates)));
    await client.cancel(sessionId);
    assert.deepEqual(await second, { stopReason: 'cancelled' });
  },
);

test('Replayer plays nothing recorded after an agent request until the live client answers it', async () => {
  const rec = (seq, direction, kind, method, id, msg) => ({
    seq,
    time: seq,
    direction,
    kind,
    method,
    id,
    payload: JSON.stringify({ jsonrpc: '2.0', ...msg }),
  });
  const records = [
    rec(1, 'send', 'request', 'session/prompt', 7, { id: 7, method: 'session/prompt', params: {} }),
    rec(2, 'receive', 'request', 'session/request_permission', 'srv_1', {
      id: 'srv_1',
      method: 'session/request_permission',
      params: {},
    }),
    rec(3, 'send', 'response', 'session/request_permission', 'srv_1', {
      id: 'srv_1',
      result: { outcome: { outcome: 'cancelled' } },
    }),
    rec(4, 'receive', 'notification', 'session/update', undefined, { method: 'session/update', params: { n: 1 } }),
    rec(5, 'receive', 'response', 'session/prompt', 7, { id: 7, result: { stopReason: 'end_turn' } }),
  ];
  const written = [];
  const replayer = new Replayer(records, { write: (line) => void written.push(JSON.parse(line)) });
  const settled = () => new Promise((r) => setImmediate(r));
  await replayer.start();
  replayer.receive(JSON.stringify({ jsonrpc: '2.0', id: 42, method: 'session/prompt', params: {} }));
  await settled();
  assert.deepEqual(
    written.map((m) => m.method ?? `response ${m.id}`),
    ['session/request_permission'],
  );
  replayer.receive(
    JSON.stringify({ jsonrpc: '2.0', id: 'srv_1', result: { outcome: { outcome: 'selected', optionId: 'a' } } }),
  );
  await replayer.idle();
  assert.deepEqual(
    written.map((m) => m.method ?? `response ${m.id}`),
    ['session/request_permission', 'session/update', 'response 42'],
  );
});

test(
  'replay ends an open prompt as cancelled on a session/cancel the recording does not have',
  NEEDS_SIGINT,
  async (t) => {
    // A turn that never ended: the recording stops with the prompt unanswered and no cancel.
    let stopped = false;
    const file = await record(t, 'say:stuck hang\n', [], {
      until(out, child) {
        if (!stopped && /^stuck$/m.test(out)) {
          stopped = true;
          child.kill('SIGTERM');
        }
      },
    });
    const { client, updates } = await replayClient(t, file);
    const { sessionId } = await client.newSession();
    const turn = client.prompt({ sessionId, prompt: 'x' });
    await until(() => agentText(updates) === 'stuck');
    await client.cancel(sessionId);
    assert.deepEqual(await turn, { stopReason: 'cancelled' });
  },
);

test('replay refuses a recording whose payloads were cut, naming the line', async (t) => {
  const dir = tempDir(t);
  const file = join(dir, 'history.ndjson');
  const client = new AcpClient({ command: process.execPath, args: [MOCK_AGENT], historyMaxPayloadBytes: 100 });
  await client.initialize();
  await client.saveHistory(file);
  await client.close();
  const run = await runCli(['replay', file], '');
  assert.equal(run.code, 1);
  assert.match(run.stderr, /history\.ndjson:\d+: the payload was cut to \d+ characters/);

  writeFileSync(join(dir, 'empty.ndjson'), '{"format":"acp-native-recording"}\n');
  const empty = await runCli(['replay', join(dir, 'empty.ndjson')], '');
  assert.equal(empty.code, 1);
  assert.match(empty.stderr, /no wire messages/);
});

test('usage errors exit 2 with the usage; a recording that cannot be written exits 1', async () => {
  for (const args of [[], ['nope'], ['chat'], ['record', '--', 'x'], ['replay'], ['chat', '--bogus', '--', 'x']]) {
    const run = await runCli(args, '');
    if (args.length === 0) {
      assert.equal(run.code, 0);
      assert.match(run.stdout, /^Usage:/);
    } else {
      assert.equal(run.code, 2, `${args.join(' ')}: ${run.stderr}`);
      assert.match(run.stderr, /^acp-native: .*\n\nUsage:/);
    }
  }
  const run = await runCli(['record', '--out', '/nonexistent-dir/x.ndjson', '--', process.execPath, MOCK_AGENT], '');
  assert.equal(run.code, 1);
  assert.match(run.stderr, /cannot write the recording: ENOENT/);
});

test('parseArgs: the agent command starts after -- (or at the first positional) and keeps its own flags', () => {
  assert.deepEqual(parseArgs(['chat', '--cwd', '/w', '--', 'agentao', '--acp', '--stdio']), {
    command: 'chat',
    options: { cwd: '/w' },
    agent: { command: 'agentao', args: ['--acp', '--stdio'] },
  });
  assert.deepEqual(parseArgs(['chat', 'agentao', '--stderr']).agent, { command: 'agentao', args: ['--stderr'] });
  assert.deepEqual(parseArgs(['replay', '--realtime', 'f.ndjson']), {
    command: 'replay',
    options: { realtime: true },
    file: 'f.ndjson',
  });
  assert.throws(() => parseArgs(['record', '--out']), UsageError);
});

test("parseArgs: '--help' after a command is help (the agent's own --help stays the agent's); chat --agent takes --offline like agents", () => {
  assert.deepEqual(parseArgs(['agents', '--help']), { command: 'help' });
  assert.deepEqual(parseArgs(['agents', 'list', '-h']), { command: 'help' });
  assert.deepEqual(parseArgs(['export', '--help']), { command: 'help' });
  assert.deepEqual(parseArgs(['chat', 'agentao', '--help']).agent, { command: 'agentao', args: ['--help'] });
  assert.deepEqual(parseArgs(['chat', '--', 'agentao', '--help']).agent, { command: 'agentao', args: ['--help'] });
  assert.deepEqual(parseArgs(['chat', '--agent', 'agentao', '--offline']), {
    command: 'chat',
    options: { agent: 'agentao', offline: true },
    agentId: 'agentao',
  });
});

test('chat --fs lets the agent read files under the session cwd and nowhere else; without it, no fs at all', async (t) => {
  const dir = tempDir(t);
  writeFileSync(join(dir, 'inside.txt'), 'inside text\n');
  const outsideDir = tempDir(t);
  writeFileSync(join(outsideDir, 'outside.txt'), 'secret\n');
  const script = `read:${encodeURIComponent(join(dir, 'inside.txt'))} read:${encodeURIComponent(join(outsideDir, 'outside.txt'))}\n`;

  const on = await runCli(['chat', '--fs', '--cwd', dir, '--', process.execPath, MOCK_AGENT], script);
  assert.equal(on.code, 0, on.stderr);
  assert.match(on.stdout, /"content":"inside text\\n"/);
  assert.match(on.stdout, /"reason":"outsideRoots"/);
  assert.doesNotMatch(on.stdout, /secret/);

  const off = await runCli(['chat', '--cwd', dir, '--', process.execPath, MOCK_AGENT], script);
  assert.equal(off.code, 0, off.stderr);
  assert.match(off.stdout, /Method not found: fs\/read_text_file/);
  assert.doesNotMatch(off.stdout, /inside text/);
});
