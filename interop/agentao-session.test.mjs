// Real agentao: session persistence. agentao saves a session to
// <cwd>/.agentao/sessions/ only when its stdin closes (close(), not a
// signal); a new process can session/load it, or start with --resume.
// Either way the history is replayed as session/updates BEFORE the result
// that tells the host the session id.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { startAgentao, scratchDir } from './helpers.mjs';
import { startFakeLlm } from './fake-llm.mjs';

/** Run one turn in a fresh agentao, close it (stdin EOF) and return the session id. */
async function savedSession(t, { llm, home, cwd }) {
  const first = await startAgentao(t, { llm, home, cwd });
  await first.client.initialize();
  const { sessionId } = await first.client.newSession({ cwd });
  await first.client.prompt({ sessionId, prompt: 'remember the codeword pelican' });
  const exit = await first.client.close();
  assert.equal(exit.exitCode, 0);
  assert.equal(exit.reason, 'closed');
  return sessionId;
}

/** Texts of the replayed user and agent messages for `sessionId` in `seen[0..end)`. */
function replayed(seen, sessionId, end = seen.length) {
  return seen
    .slice(0, end)
    .filter((e) => e.kind === 'update' && e.sessionId === sessionId)
    .map((e) => `${e.update.sessionUpdate}:${e.update.content?.text ?? ''}`);
}

async function fixture(t) {
  const llm = await startFakeLlm();
  t.after(() => llm.close());
  return { llm, home: scratchDir(t, 'home'), cwd: scratchDir(t, 'project') };
}

test('close (stdin EOF) persists the session; a new process session/loads it, replay first', async (t) => {
  const where = await fixture(t);
  const sessionId = await savedSession(t, where);
  const saved = readdirSync(join(where.cwd, '.agentao', 'sessions'));
  assert.ok(
    saved.some((f) => readFileSync(join(where.cwd, '.agentao', 'sessions', f), 'utf8').includes('pelican')),
    `no saved session holds the turn: ${saved}`,
  );

  const second = await startAgentao(t, where);
  await second.client.initialize();
  const result = await second.client.loadSession({ sessionId, cwd: where.cwd });
  // Everything replayed was delivered before loadSession resolved.
  const atResult = second.seen.length;
  assert.equal(result.configOptions[0].id, 'model');
  const history = replayed(second.seen, sessionId, atResult);
  assert.ok(history.includes('user_message_chunk:remember the codeword pelican'), history.join('\n'));
  assert.ok(
    history.some((h) => h.startsWith('agent_message_chunk:') && h.includes('pelican')),
    history.join('\n'),
  );

  // The loaded session carries its history into the next model call.
  await second.client.prompt({ sessionId, prompt: 'what was the codeword' });
  const messages = where.llm.chats.at(-1).body.messages;
  assert.ok(messages.some((m) => m.role === 'user' && String(m.content).includes('remember the codeword pelican')));
  await second.client.close();
});

test('agentao --acp --resume replays the saved session before the session id is known', async (t) => {
  const where = await fixture(t);
  const sessionId = await savedSession(t, where);

  const resumed = await startAgentao(t, { ...where, args: ['--resume', sessionId] });
  await resumed.client.initialize();
  const result = await resumed.client.newSession({ cwd: where.cwd });
  const atResult = resumed.seen.length;
  // session/new returns the OLD id…
  assert.equal(result.sessionId, sessionId);
  // …and the replay for that id arrived before it: the host could not have
  // known the id yet, and the client still delivered the updates.
  const history = replayed(resumed.seen, sessionId, atResult);
  assert.ok(history.includes('user_message_chunk:remember the codeword pelican'), history.join('\n'));

  // Only the first session/new resumes; the next one is blank.
  const fresh = await resumed.client.newSession({ cwd: where.cwd });
  assert.notEqual(fresh.sessionId, sessionId);
  assert.equal(resumed.seen.filter((e) => e.sessionId === fresh.sessionId).length, 0);
  await resumed.client.close();
});

test('a killed agentao saved nothing: session/load of that session rejects -32600', async (t) => {
  // Why a host must stop agentao with close() (stdin EOF), not a signal.
  const where = await fixture(t);
  const first = await startAgentao(t, where);
  await first.client.initialize();
  const { sessionId } = await first.client.newSession({ cwd: where.cwd });
  await first.client.prompt({ sessionId, prompt: 'remember the codeword pelican' });
  first.client.kill();
  await new Promise((resolve) => first.client.once('exit', resolve));
  assert.equal(existsSync(join(where.cwd, '.agentao', 'sessions')), false, 'a killed agentao saved its session');

  const second = await startAgentao(t, where);
  await second.client.initialize();
  await assert.rejects(second.client.loadSession({ sessionId, cwd: where.cwd }), (err) => {
    assert.equal(err.code, 'ERR_ACP_RPC');
    assert.equal(err.rpcCode, -32600);
    assert.match(err.message, /not found|No sessions/);
    return true;
  });
  await second.client.close();
});

test('close() during a turn: agentao answers the prompt (cancelled) after stdin EOF, saves, exits 0', async (t) => {
  const where = await fixture(t);
  const { client, waitFor } = await startAgentao(t, where);
  await client.initialize();
  const { sessionId } = await client.newSession({ cwd: where.cwd });
  const turn = client.prompt({ sessionId, prompt: 'slow' });
  await waitFor((e) => e.kind === 'update' && e.update.sessionUpdate === 'agent_message_chunk');
  const closing = client.close();
  // The client kept reading stdout after closing stdin, so the answer arrived.
  assert.deepEqual(await turn, { stopReason: 'cancelled' });
  const exit = await closing;
  assert.equal(exit.exitCode, 0);
  assert.equal(exit.signal, null, 'agentao needed a signal to stop');
  assert.equal(readdirSync(join(where.cwd, '.agentao', 'sessions')).length, 1);
});
