// The official Python ACP SDK's example agents (from its sdist): two more
// independent implementations of the agent side. Where they deviate from
// the spec, the test pins down the deviation and the client's handling.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { peers, recordingClient, scratchDir, agentText } from './helpers.mjs';

function sdkAgent(t, script) {
  const permissions = [];
  const h = recordingClient(t, {
    command: peers.python,
    args: [script],
    handlers: {
      'session/request_permission': (p) => {
        permissions.push(p);
        return { outcome: { outcome: 'selected', optionId: p.options[0].optionId } };
      },
    },
  });
  return { ...h, permissions };
}

test('echo_agent.py: full turn; every prompt block comes back with its _meta kept', async (t) => {
  const { client, seen, permissions } = sdkAgent(t, peers.echoAgent);
  const init = await client.initialize();
  assert.equal(init.protocolVersion, 1);
  // It sends no agentCapabilities / agentInfo at all; the client copes.
  assert.equal(init.agentCapabilities, undefined);
  const { sessionId } = await client.newSession({ cwd: scratchDir(t, 'echo') });
  assert.match(sessionId, /^[0-9a-f]{32}$/);
  const result = await client.prompt({
    sessionId,
    prompt: [
      { type: 'text', text: 'ping' },
      { type: 'text', text: 'pong' },
    ],
  });
  assert.deepEqual(result, { stopReason: 'end_turn' });
  assert.equal(agentText(seen), 'pingpong');
  const [first] = seen;
  assert.equal(first.sessionId, sessionId);
  assert.deepEqual(first.update._meta, { echo: true });
  assert.deepEqual(first.update.content._meta, { echo: true });
  // It has no tools, so it never asks for permission.
  assert.equal(permissions.length, 0);
  assert.equal((await client.close()).exitCode, 0);
});

test('echo_agent.py echoes any protocolVersion back; the client rejects the version it cannot speak', async (t) => {
  const { client } = sdkAgent(t, peers.echoAgent);
  // Deviation: the spec says an agent answers a version it supports; this
  // one answers whatever it was sent. The client checks every initialize
  // result, even one sent through the generic request().
  await assert.rejects(client.request('initialize', { protocolVersion: 7, clientCapabilities: {} }), (err) => {
    assert.equal(err.code, 'ERR_ACP_PROTOCOL');
    assert.equal(err.result.protocolVersion, 7);
    return true;
  });
  // initialize() always sends 1, gets 1 back, and the connection is fine.
  assert.equal((await client.initialize()).protocolVersion, 1);
  await client.close();
});

test('echo_agent.py answers an unknown extension request with null; the client hands null to the caller', async (t) => {
  const { client } = sdkAgent(t, peers.echoAgent);
  await client.initialize();
  // Deviation: an unknown method should be -32601. For `_` methods the SDK
  // falls back to a null result; the client cannot tell and passes it on.
  assert.equal(await client.request('_vendor/unknown', { a: 1 }), null);
  // Unknown non-extension methods do get -32601, as a typed error.
  await assert.rejects(client.request('session/unknown_thing', {}), (err) => {
    assert.equal(err.code, 'ERR_ACP_RPC');
    assert.equal(err.rpcCode, -32601);
    return true;
  });
  await client.close();
});

test('echo_agent.py: cancel() sends session/cancel to an agent that ignores it; the turn ends as the agent says', async (t) => {
  const { client } = sdkAgent(t, peers.echoAgent);
  await client.initialize();
  const { sessionId } = await client.newSession({ cwd: scratchDir(t, 'echo') });
  const turn = client.prompt({ sessionId, prompt: 'ping' });
  assert.equal(await client.cancel(sessionId), 0);
  // This agent never reports `cancelled`: the client takes its stopReason as is.
  assert.deepEqual(await turn, { stopReason: 'end_turn' });
  assert.deepEqual(await client.prompt({ sessionId, prompt: 'again' }), { stopReason: 'end_turn' });
  await client.close();
});

test('agent.py: full turn, extension request, and session methods', async (t) => {
  const { client, seen, permissions } = sdkAgent(t, peers.exampleAgent);
  const init = await client.initialize();
  assert.equal(init.protocolVersion, 1);
  assert.equal(init.agentInfo.name, 'example-agent');
  const cwd = scratchDir(t, 'sdk');
  const { sessionId } = await client.newSession({ cwd });
  assert.equal(sessionId, '0');
  const result = await client.prompt({
    sessionId,
    prompt: [
      { type: 'text', text: 'hello' },
      { type: 'text', text: 'world' },
    ],
  });
  assert.deepEqual(result, { stopReason: 'end_turn' });
  assert.deepEqual(
    seen.map((e) => e.update.content.text),
    ['Client sent:', 'hello', 'world'],
  );
  assert.equal(permissions.length, 0, 'agent.py has no tools and never asks');
  // Its ext_method answers every `_` method.
  assert.deepEqual(await client.request('_vendor/anything', { x: 1 }), { example: 'response' });
  // Deviation: it answers session/load without advertising loadSession.
  assert.notEqual(init.agentCapabilities.loadSession, true);
  assert.deepEqual(await client.loadSession({ sessionId, cwd }), {});
  assert.deepEqual(await client.setSessionMode({ sessionId, modeId: 'any' }), {});
  await client.close();
});

test('agent.py: cancel() reaches the agent (its log says so) and the session keeps working', async (t) => {
  const { client } = sdkAgent(t, peers.exampleAgent);
  await client.initialize();
  const { sessionId } = await client.newSession({ cwd: scratchDir(t, 'sdk') });
  const turn = client.prompt({ sessionId, prompt: 'long task' });
  assert.equal(await client.cancel(sessionId), 0);
  await turn;
  // The agent logs every notification it handles; by the time a later
  // request is answered, the cancel was handled before it (stdin order).
  await client.prompt({ sessionId, prompt: 'next' });
  const exit = await client.close();
  const log = exit.stderrTail;
  assert.match(log, new RegExp(`Received cancel notification for session ${sessionId}`));
  assert.ok(
    log.indexOf('Received cancel notification') < log.lastIndexOf('Received prompt request'),
    'cancel was handled after the next prompt',
  );
});
