// `replay` and `export` take any file: a line that is not a whole trace
// record is an error naming its line (never an uncaught exception), and
// memory stays within the documented limits whatever the file holds.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createWriteStream, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const CLI = fileURLToPath(new URL('../cli/acp-native.mjs', import.meta.url));

function scratch(t) {
  const dir = mkdtempSync(join(tmpdir(), 'acp-native-hostile-rec-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** `node [nodeFlags] cli args` with stdin `input`; killed after a generous deadline. */
function run(args, { input = '', nodeFlags = [] } = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...nodeFlags, CLI, ...args], { stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    const deadline = setTimeout(() => child.kill('SIGKILL'), 120_000);
    child.on('error', reject);
    child.on('close', (code, signal) => {
      clearTimeout(deadline);
      resolve({ code, signal, stdout, stderr });
    });
    child.stdin.end(input);
  });
}

let seq = 0;
const rec = (direction, kind, msg, extra = {}) =>
  JSON.stringify({
    seq: ++seq,
    time: 1_700_000_000_000 + seq,
    direction,
    kind,
    method: msg.method,
    id: msg.id,
    bytes: 0,
    payload: JSON.stringify(msg),
    ...extra,
  });
const HEADER = JSON.stringify({ format: 'acp-native-recording', version: 1 });
const INIT_REQ = rec('send', 'request', {
  jsonrpc: '2.0',
  id: 0,
  method: 'initialize',
  params: { protocolVersion: 1 },
});
const INIT_RES = rec('receive', 'response', { jsonrpc: '2.0', id: 0, result: { protocolVersion: 1 } });
const update = (sid, u) =>
  rec('receive', 'notification', { jsonrpc: '2.0', method: 'session/update', params: { sessionId: sid, update: u } });
const CHUNK = update('s1', { sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: 'hello' } });

// Each: the lines after the header, and the error expected for line 3.
const MALFORMED = {
  'a cut response payload (not marked truncated)': [
    INIT_REQ,
    INIT_RES.replace(/"payload":"(.*)"/, (_, p) => `"payload":"${p.slice(0, 30)}"`),
    /:3: the payload is not JSON, cut or damaged/,
  ],
  'a line that is not JSON': [INIT_REQ, '{"seq":2,"direction":"receive","payl', /:3: not JSON/],
  'a line that is an array': [INIT_REQ, '[1,2,3]', /:3: not a JSON object/],
  'a payload that is a number': [
    INIT_REQ,
    JSON.stringify({ direction: 'receive', kind: 'response', payload: 42 }),
    /:3: no payload/,
  ],
  'an unknown kind': [
    INIT_REQ,
    JSON.stringify({ direction: 'receive', kind: 'surprise', payload: '{}' }),
    /:3: kind must be one of/,
  ],
  'a bad direction': [
    INIT_REQ,
    JSON.stringify({ direction: 'sideways', kind: 'response', payload: '{}' }),
    /:3: direction must be "send" or "receive"/,
  ],
  'a response without an id': [
    INIT_REQ,
    rec('receive', 'response', { jsonrpc: '2.0', result: {} }),
    /:3: a response without an id/,
  ],
  'a payload that is a JSON string': [
    INIT_REQ,
    JSON.stringify({ direction: 'receive', kind: 'notification', payload: '"text"' }),
    /:3: the payload is not a JSON-RPC message/,
  ],
};

for (const [name, [line2, line3, expected]] of Object.entries(MALFORMED)) {
  test(`replay and export: ${name} is an error naming the line, not a crash`, async (t) => {
    const dir = scratch(t);
    const file = join(dir, 'bad.ndjson');
    writeFileSync(file, `${HEADER}\n${line2}\n${line3}\n${CHUNK}\n`);
    // The live client asks what the recording answers: the old replay parsed the payload only then.
    const initialize = `${JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'initialize', params: { protocolVersion: 1 } })}\n`;
    const replay = await run(['replay', file], { input: initialize });
    assert.equal(replay.code, 1, `${replay.stderr}`);
    assert.match(replay.stderr, expected);
    assert.doesNotMatch(replay.stderr, /SyntaxError|TypeError|\n\s+at /);
    const exported = await run(['export', file]);
    assert.equal(exported.code, 1);
    assert.match(exported.stderr, expected);
    assert.doesNotMatch(exported.stderr, /SyntaxError|TypeError|\n\s+at /);
  });
}

/** Writes `text` (a string or a function producing chunks) to a stream, honouring backpressure. */
async function writeAll(stream, chunks) {
  for (const chunk of chunks) if (!stream.write(chunk)) await new Promise((r) => stream.once('drain', r));
}

test('export of a recording with 300k sessions, a 100k-deep update and a 150 MB line: done within a 256 MB heap, what was skipped said', async (t) => {
  const dir = scratch(t);
  const file = join(dir, 'huge.ndjson');
  const out = createWriteStream(file);
  await writeAll(out, [`${HEADER}\n${INIT_REQ}\n${INIT_RES}\n${CHUNK}\n`]);
  // 300k sessions, one small update each.
  const many = function* () {
    for (let i = 0; i < 300_000; i += 1000) {
      let block = '';
      for (let j = i; j < i + 1000; j++)
        block += `${update(`sess-${j}`, { sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: 'x' } })}\n`;
      yield block;
    }
  };
  await writeAll(out, many());
  // An update nested 100k deep (an unknown variant, kept whole by the fold).
  const deep = `${'['.repeat(100_000)}${']'.repeat(100_000)}`;
  const deepPayload = `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"x","v":${deep}}}}`;
  await writeAll(out, [`${JSON.stringify({ direction: 'receive', kind: 'notification', payload: deepPayload })}\n`]);
  // One 150 MB line.
  const big = function* () {
    yield '{"direction":"receive","kind":"notification","payload":"{\\"jsonrpc\\":\\"2.0\\",\\"method\\":\\"session/update\\",\\"params\\":{\\"sessionId\\":\\"s1\\",\\"update\\":{\\"sessionUpdate\\":\\"agent_message_chunk\\",\\"content\\":{\\"type\\":\\"text\\",\\"text\\":\\"';
    const mb = 'y'.repeat(1024 * 1024);
    for (let i = 0; i < 150; i++) yield mb;
    yield '\\"}}}}"}\n';
  };
  await writeAll(out, big());
  await writeAll(out, [`${CHUNK}\n`]);
  await new Promise((resolve, reject) => out.end((err) => (err ? reject(err) : resolve())));

  // The old export read the file whole, then folded every session: it ran out of heap.
  const res = await run(['export', '--session', 's1', file], { nodeFlags: ['--max-old-space-size=256'] });
  assert.equal(res.signal, null, res.stderr.slice(-2000));
  assert.equal(res.code, 0, res.stderr.slice(-2000));
  assert.match(res.stdout, /## Agent\n\nhellohello\n/);
  assert.match(res.stderr, /skipped 1 line\(s\) longer than 134217728 bytes \(--max-line-bytes\)/);
  assert.match(res.stderr, /skipped 1 line\(s\) nested deeper than 512/);
  assert.match(res.stderr, /skipped 299901 message\(s\) of sessions after the first 100 \(--max-sessions\)/);

  // Replay needs every line: the first one over a limit is an error naming it.
  const replay = await run(['replay', file], { nodeFlags: ['--max-old-space-size=256'] });
  assert.equal(replay.code, 1, replay.stderr.slice(-2000));
  assert.match(replay.stderr, new RegExp(`huge\\.ndjson:${300_005}: nested deeper than 512`));
});

test('export and replay of lines wide enough to blow up when parsed (60 MB of [0,0,…], in the payload and in the record): skipped or an error naming the line, within a 256 MB heap', async (t) => {
  const dir = scratch(t);
  const file = join(dir, 'wide.ndjson');
  const out = createWriteStream(file);
  await writeAll(out, [`${HEADER}\n${INIT_REQ}\n${INIT_RES}\n${CHUNK}\n`]);
  // A tool call whose rawInput is 30 million zeros: 60 MB of text, a tree several times that.
  const zeros = function* (open, close) {
    yield open;
    const chunk = ',0'.repeat(512 * 1024);
    for (let i = 0; i < 60; i++) yield chunk;
    yield close;
  };
  await writeAll(
    out,
    zeros(
      `{"direction":"receive","kind":"notification","payload":"{\\"jsonrpc\\":\\"2.0\\",\\"method\\":\\"session/update\\",\\"params\\":{\\"sessionId\\":\\"s1\\",\\"update\\":{\\"sessionUpdate\\":\\"tool_call\\",\\"toolCallId\\":\\"c1\\",\\"title\\":\\"t\\",\\"rawInput\\":[0`,
      ']}}}"}\n',
    ),
  );
  // The same width beside the payload, in the record itself.
  await writeAll(out, zeros('{"direction":"receive","kind":"notification","payload":"{}","extra":[0', ']}\n'));
  await writeAll(out, [`${CHUNK}\n`]);
  await new Promise((resolve, reject) => out.end((err) => (err ? reject(err) : resolve())));

  const res = await run(['export', '--session', 's1', file], { nodeFlags: ['--max-old-space-size=256'] });
  assert.equal(res.signal, null, res.stderr.slice(-2000));
  assert.equal(res.code, 0, res.stderr.slice(-2000));
  assert.match(res.stdout, /## Agent\n\nhellohello\n/);
  assert.match(res.stderr, /skipped 2 line\(s\) with more than 1000000 JSON values/);

  const replay = await run(['replay', file], { nodeFlags: ['--max-old-space-size=256'] });
  assert.equal(replay.signal, null, replay.stderr.slice(-2000));
  assert.equal(replay.code, 1, replay.stderr.slice(-2000));
  assert.match(replay.stderr, /wide\.ndjson:5: more than 1000000 JSON values/);
});
