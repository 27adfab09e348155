// The built-in fs/terminal handlers against an agent written with the
// official Python ACP SDK: it makes its calls through the SDK's client API,
// so the SDK's pydantic models validate every answer (a shape they reject
// shows up as an `exception` step).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, realpathSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { peers, recordingClient, scratchDir, agentText } from './helpers.mjs';

const TOOLS_AGENT = fileURLToPath(new URL('./fixtures/sdk_tools_agent.py', import.meta.url));

test('Python SDK agent: fs and terminal calls are answered by the built-ins in shapes the SDK accepts', async (t) => {
  const project = realpathSync(scratchDir(t, 'tools'));
  const outside = realpathSync(scratchDir(t, 'tools-outside'));
  const { client, seen } = recordingClient(t, {
    command: peers.python,
    args: [TOOLS_AGENT],
    fs: true,
    terminals: true,
  });
  await client.initialize();
  const { sessionId } = await client.newSession({ cwd: project });
  const file = join(project, 'notes', 'n.txt');
  await client.prompt({ sessionId, prompt: JSON.stringify({ file, outside: join(outside, 'secret.txt') }) });
  const r = JSON.parse(agentText(seen));

  assert.deepEqual(r.capabilities.fs, { readTextFile: true, writeTextFile: true });
  assert.equal(r.capabilities.terminal, true);
  assert.deepEqual(r.write, { ok: {} });
  assert.equal(readFileSync(file, 'utf8'), 'α\nβ\nγ\n');
  assert.deepEqual(r.read, { ok: { content: 'β\n' } });
  assert.equal(r.escape.error.code, -32602);
  assert.equal(r.escape.error.data.reason, 'outsideRoots');

  assert.match(r.create.ok.terminalId, /^term_/);
  assert.deepEqual(r.wait, { ok: { exitCode: 4 } }); // signal null is dropped by exclude_none
  // "héllo wörld" is 13 bytes; the last 9 start inside no character: "lo wörld".
  assert.deepEqual(r.output, { ok: { output: 'lo wörld', truncated: true, exitStatus: { exitCode: 4 } } });
  assert.deepEqual(r.release, { ok: {} });

  assert.deepEqual(r.kill, { ok: {} });
  assert.deepEqual(r.killed, { ok: { signal: 'SIGKILL' } });
  assert.deepEqual(r.killed_output.ok.exitStatus, { signal: 'SIGKILL' });
  assert.deepEqual(r.release_long, { ok: {} });
  assert.equal(r.after_release.error.code, -32002);
  for (const [step, v] of Object.entries(r)) assert.equal(v?.exception, undefined, `${step}: ${v?.exception}`);
  assert.equal(client.openTerminals, 0);
  await client.close();
});
