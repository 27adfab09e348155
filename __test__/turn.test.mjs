import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { mockClient, mockSession, agentText, reported } from './helpers.mjs';
import { AcpClient, AcpError, PROTOCOL_VERSION } from '../index.mjs';

test('CommonJS require and ESM import give the same API', () => {
  const cjs = createRequire(import.meta.url)('../index.js');
  assert.equal(cjs.AcpClient, AcpClient);
  assert.equal(cjs.AcpError, AcpError);
  assert.equal(PROTOCOL_VERSION, 1);
});

test('a full turn streams every update in wire order, then resolves', async () => {
  const { client, sessionId, updates } = await mockSession();
  const result = await client.prompt({ sessionId, prompt: 'text:3 thought:2 tool plan say:done' });
  assert.deepEqual(result, { stopReason: 'end_turn' });
  assert.deepEqual(
    updates.map((u) => u.sessionUpdate),
    [
      'agent_message_chunk',
      'agent_message_chunk',
      'agent_message_chunk',
      'agent_thought_chunk',
      'agent_thought_chunk',
      'tool_call',
      'tool_call_update',
      'plan',
      'agent_message_chunk',
    ],
  );
  assert.equal(agentText(updates), 'chunk0 chunk1 chunk2 done');
  assert.equal(updates[7].entries.length, 2);
  const exit = await client.close();
  assert.equal(exit.exitCode, 0);
  assert.equal(exit.reason, 'closed');
  assert.equal(await client.closed, exit);
});

test('initialize sends protocolVersion 1, clientInfo and capabilities derived from handlers', async () => {
  const client = mockClient({
    clientInfo: { name: 'my-host', version: '9.9.9' },
    handlers: {
      'fs/read_text_file': () => ({ content: '' }),
      'terminal/create': () => ({ terminalId: 't' }),
    },
  });
  const init = await client.initialize();
  assert.equal(init.protocolVersion, 1);
  assert.equal(init.agentInfo.name, 'mock-agent');
  assert.equal(client.agent, init);
  assert.equal(init._meta.receivedProtocolVersion, 1);
  assert.deepEqual(init._meta.receivedClientInfo, { name: 'my-host', version: '9.9.9' });
  // fs read is handled, write is not; one terminal method is not enough.
  assert.deepEqual(init._meta.receivedClientCapabilities, {
    fs: { readTextFile: true, writeTextFile: false },
    terminal: false,
  });
  await client.close();
});

test('an agent that answers another protocolVersion is rejected with ERR_ACP_PROTOCOL', async () => {
  const client = mockClient({}, ['--protocol-version', '2']);
  await assert.rejects(client.initialize(), (err) => {
    assert.equal(err.code, 'ERR_ACP_PROTOCOL');
    assert.match(err.message, /protocolVersion 2/);
    return true;
  });
  await client.close();
});

test('unknown sessionUpdate variants and unknown fields pass through untouched', async () => {
  const { client, sessionId, updates } = await mockSession();
  await client.prompt({ sessionId, prompt: 'future' });
  assert.deepEqual(updates[0], { sessionUpdate: 'hologram_projection', schema_version: 1, beam: { color: 'blue' } });
  await client.close();
});

test('session methods, the generic request() and notify()', async () => {
  const { client, sessionId } = await mockSession();
  const mode = await client.setSessionMode({ sessionId, modeId: 'plan' });
  assert.equal(mode._meta.method, 'session/set_mode');
  assert.deepEqual(mode._meta.params, { sessionId, modeId: 'plan' });
  const opt = await client.setSessionConfigOption({ sessionId, configId: 'model', value: 'm2' });
  assert.equal(opt._meta.method, 'session/set_config_option');
  for (const [call, method] of [
    [() => client.authenticate({ methodId: 'x' }), 'authenticate'],
    [() => client.logout(), 'logout'],
    [() => client.resumeSession({ sessionId }), 'session/resume'],
    [() => client.closeSession({ sessionId }), 'session/close'],
    [() => client.deleteSession({ sessionId }), 'session/delete'],
  ]) {
    assert.equal((await call())._meta.method, method);
  }
  const list = await client.listSessions();
  assert.deepEqual(
    list.sessions.map((s) => s.sessionId),
    [sessionId],
  );
  // Extension methods go through request(); params come back unchanged.
  const payload = { model: 'gpt-x', nested: { a: [1, 2, { b: null }] }, unicode: 'ü\u2028😀' };
  assert.deepEqual(await client.request('_mock/echo', payload), payload);
  await client.notify('_agentao.cn/ping', { n: 1 });
  const { received } = await client.request('_mock/received');
  assert.deepEqual(received.at(-1), { jsonrpc: '2.0', method: '_agentao.cn/ping', params: { n: 1 } });
  await client.close();
});

test('session/load: replayed history arrives before the load result', async () => {
  const updates = [];
  let updatesWhenLoaded = -1;
  const client = mockClient({ onSessionUpdate: (p) => updates.push(p) });
  await client.initialize();
  await client.loadSession({ sessionId: 'sess_old', cwd: '/tmp' }).then(() => (updatesWhenLoaded = updates.length));
  assert.equal(updatesWhenLoaded, 2);
  assert.equal(updates[0].sessionId, 'sess_old');
  assert.equal(updates[0].update.sessionUpdate, 'user_message_chunk');
  await client.close();
});

test('an RPC error from the agent rejects with ERR_ACP_RPC carrying code and data', async () => {
  const client = mockClient();
  await client.initialize();
  await assert.rejects(
    client.request('_mock/fail', { code: -32603, message: 'LLM down', data: { reason: 'llm_error' } }),
    (err) => {
      assert.ok(err instanceof AcpError);
      assert.equal(err.code, 'ERR_ACP_RPC');
      assert.equal(err.rpcCode, -32603);
      assert.deepEqual(err.data, { reason: 'llm_error' });
      assert.equal(err.method, '_mock/fail');
      return true;
    },
  );
  await assert.rejects(client.request('nope/nothing'), { code: 'ERR_ACP_RPC', rpcCode: -32601 });
  await client.close();
});

test('a burst of 5,000 updates right before the response is delivered before prompt() resolves, 50 times', async () => {
  const { client, sessionId, updates } = await mockSession();
  for (let round = 0; round < 50; round++) {
    updates.length = 0;
    await client.prompt({ sessionId, prompt: 'burst:5000' });
    assert.equal(updates.length, 5000, `round ${round}`);
    assert.equal(updates[4999].content.text, 'b4999');
  }
  await client.close();
});

test('a 1 MB message makes the round trip intact', async () => {
  const { client, sessionId, updates } = await mockSession();
  const big = Array.from({ length: 1 << 20 }, (_, i) => String.fromCharCode(97 + (i % 26))).join('');
  await client.prompt({
    sessionId,
    prompt: [
      { type: 'text', text: 'echo' },
      { type: 'text', text: big },
    ],
  });
  assert.equal(agentText(updates), big);
  assert.deepEqual(await client.request('_mock/echo', { big }), { big });
  await client.close();
});

test('agent request ids are echoed exactly, strings and numbers', async () => {
  for (const args of [['--string-ids'], []]) {
    const { client, sessionId, updates } = await mockSession(
      { handlers: { '_agentao.cn/ask_user': () => ({ outcome: 'answered', text: 'blue' }) } },
      args,
    );
    await client.prompt({ sessionId, prompt: 'ext:_agentao.cn/ask_user' });
    const reply = reported(updates, 'ext');
    // The mock matched our response to its own id, so the echo was exact.
    assert.deepEqual(reply.result, { outcome: 'answered', text: 'blue' });
    if (args.length) assert.match(reply.id, /^srv_[0-9a-f]{16}$/);
    else assert.equal(typeof reply.id, 'number');
    await client.close();
  }
});
