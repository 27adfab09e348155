import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AcpClient } from '../index.js';
import { TIME_SCALE } from './helpers.mjs';

// Every call the host is awaiting settles before the client says it is
// finished: its Promise's handlers run before the `exit` event, the
// `closed` Promise and close()'s own Promise. A host that logs "done" on
// close() must not see a prompt still running after it.

/** An agent that reads and never answers; it ends on stdin EOF (close()). */
const SILENT = "process.stdin.resume(); process.stdin.on('end', () => process.exit(0));";
/** An agent that exits on its own as soon as a request arrives. */
const CRASHING = "process.stdin.once('data', () => process.exit(3));";

const S = { sessionId: 'sess-1' };
const CALLS = {
  initialize: (c) => c.initialize(),
  authenticate: (c) => c.authenticate({ methodId: 'm' }),
  logout: (c) => c.logout(),
  newSession: (c) => c.newSession({ cwd: process.cwd() }),
  loadSession: (c) => c.loadSession({ ...S, cwd: process.cwd() }),
  listSessions: (c) => c.listSessions(),
  resumeSession: (c) => c.resumeSession({ ...S, cwd: process.cwd() }),
  closeSession: (c) => c.closeSession(S),
  deleteSession: (c) => c.deleteSession(S),
  setSessionMode: (c) => c.setSessionMode({ ...S, modeId: 'ask' }),
  setSessionConfigOption: (c) => c.setSessionConfigOption({ ...S, configId: 'x', value: 'y' }),
  prompt: (c) => c.prompt({ ...S, prompt: 'hi' }),
  request: (c) => c.request('_x/never', {}),
};

function client(script, log) {
  const c = new AcpClient({ command: process.execPath, args: ['-e', script], closeGraceMs: 10_000 });
  c.on('exit', () => log.push('exit'));
  c.closed.then(() => log.push('closed'));
  return c;
}

function follow(p, log, name) {
  p.then(
    () => log.push(`${name} resolved`),
    (err) => log.push(`${name} ${err.code}`),
  );
}

for (const [name, call] of Object.entries(CALLS)) {
  test(`${name}() settles before close() resolves, before exit and closed`, {
    timeout: 30_000 * TIME_SCALE,
  }, async () => {
    const log = [];
    const c = client(SILENT, log);
    follow(call(c), log, name);
    await c.close();
    log.push('close()');
    assert.deepEqual(log, [`${name} ERR_ACP_CLOSED`, 'exit', 'closed', 'close()']);
  });
}

test('kill(): every pending call settles before exit and closed', { timeout: 30_000 * TIME_SCALE }, async () => {
  const log = [];
  const c = client(SILENT, log);
  for (const [name, call] of Object.entries(CALLS)) follow(call(c), log, name);
  c.kill();
  await c.closed;
  assert.deepEqual(log.slice(-2), ['exit', 'closed']);
  assert.equal(log.length, Object.keys(CALLS).length + 2);
});

test('an agent that exits on its own: every pending call settles before exit and closed', {
  timeout: 30_000 * TIME_SCALE,
}, async () => {
  const log = [];
  const c = client(CRASHING, log);
  for (const [name, call] of Object.entries(CALLS)) follow(call(c), log, name);
  const info = await c.closed;
  assert.equal(info.exitCode, 3);
  assert.deepEqual(log.slice(-2), ['exit', 'closed']);
  assert.equal(log.length, Object.keys(CALLS).length + 2);
  for (const line of log.slice(0, -2)) assert.match(line, / ERR_ACP_CLOSED$/);
});

test('close() after the exit was seen but before it was announced still waits for the announcement', {
  timeout: 30_000 * TIME_SCALE,
}, async () => {
  const log = [];
  const c = client(CRASHING, log);
  const p = c.prompt({ ...S, prompt: 'hi' });
  follow(p, log, 'prompt');
  // Called from the prompt's own rejection: the exit is known, `exit` not yet emitted.
  const closing = p.catch(() => c.close().then(() => log.push('close()')));
  await closing;
  assert.deepEqual(log, ['prompt ERR_ACP_CLOSED', 'exit', 'closed', 'close()']);
});
