// Real agentao: failures reach the host as typed errors with the agent's
// JSON-RPC code and data, never as a hang.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startAgentao } from './helpers.mjs';

test('no LLM configuration: initialize works, session/new rejects with JSON-RPC -32000', async (t) => {
  const { client, cwd } = await startAgentao(t, { withLlm: false });
  const init = await client.initialize();
  assert.deepEqual(init.authMethods, []);
  await assert.rejects(client.newSession({ cwd }), (err) => {
    assert.equal(err.code, 'ERR_ACP_RPC');
    assert.equal(err.rpcCode, -32000);
    assert.equal(err.method, 'session/new');
    assert.match(err.message, /OPENAI_API_KEY/);
    return true;
  });
  // The connection is still usable after the error.
  assert.equal(client.exitInfo, null);
  assert.equal((await client.close()).exitCode, 0);
});

test('the LLM answers 401: the prompt rejects with -32603 and data.reason', async (t) => {
  const { client, cwd, llm } = await startAgentao(t);
  await client.initialize();
  const { sessionId } = await client.newSession({ cwd });
  await assert.rejects(client.prompt({ sessionId, prompt: 'unauthorized' }), (err) => {
    assert.equal(err.code, 'ERR_ACP_RPC');
    assert.equal(err.rpcCode, -32603);
    assert.equal(err.method, 'session/prompt');
    assert.equal(err.data.reason, 'llm_error');
    return true;
  });
  // A 401 is not retried: the fake LLM saw exactly one chat request.
  assert.equal(llm.chats.length, 1);
  // The session survives a failed turn.
  assert.deepEqual(await client.prompt({ sessionId, prompt: 'hello' }), { stopReason: 'end_turn' });
  await client.close();
});

test('a relative cwd is rejected with -32602 before any session exists', async (t) => {
  const { client } = await startAgentao(t);
  await client.initialize();
  // newSession() refuses it locally; agentao refuses it on the wire too.
  await assert.rejects(client.newSession({ cwd: 'relative/dir' }), {
    code: 'ERR_ACP_INVALID_ARGUMENT',
    argument: 'params.cwd',
  });
  await assert.rejects(client.request('session/new', { cwd: 'relative/dir', mcpServers: [] }), (err) => {
    assert.equal(err.code, 'ERR_ACP_RPC');
    assert.equal(err.rpcCode, -32602);
    return true;
  });
  await client.close();
});

test('a second prompt while a turn runs is -32600 (busy); an unknown session is -32600', async (t) => {
  const { client, cwd } = await startAgentao(t);
  await client.initialize();
  const { sessionId } = await client.newSession({ cwd });
  const first = client.prompt({ sessionId, prompt: 'hello one' });
  const second = client.prompt({ sessionId, prompt: 'hello two' });
  await assert.rejects(second, (err) => {
    assert.equal(err.rpcCode, -32600);
    assert.match(err.message, /active turn/);
    return true;
  });
  assert.deepEqual(await first, { stopReason: 'end_turn' });
  await assert.rejects(client.prompt({ sessionId: 'sess_unknown', prompt: 'x' }), (err) => {
    assert.equal(err.rpcCode, -32600);
    assert.match(err.message, /unknown sessionId/);
    return true;
  });
  await client.close();
});
