// Every public call checks its arguments and rejects — never throws
// synchronously — with ERR_ACP_INVALID_ARGUMENT naming the argument.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mockClient, mockSession, reported } from './helpers.mjs';
import { AcpClient } from '../index.mjs';
import loader from '../lib/loader.js';

const { native } = loader;

/** `call()` must return a Promise rejecting ERR_ACP_INVALID_ARGUMENT whose message names `argument`. */
async function refuses(call, argument) {
  let result;
  assert.doesNotThrow(() => (result = call()), `${argument}: threw synchronously`);
  assert.ok(result instanceof Promise, `${argument}: not a Promise`);
  await assert.rejects(result, (err) => {
    assert.equal(err.code, 'ERR_ACP_INVALID_ARGUMENT', `${argument}: ${err.code} ${err.message}`);
    assert.equal(err.argument, argument);
    assert.ok(err.message.startsWith(argument), err.message);
    return true;
  });
}

test('bad arguments reject ERR_ACP_INVALID_ARGUMENT naming the argument, and nothing reaches the wire', async () => {
  const traced = [];
  const { client, sessionId } = await mockSession({ trace: (r) => traced.push(r) });
  const sentBefore = traced.filter((r) => r.direction === 'send').length;
  const circular = {};
  circular.self = circular;
  await refuses(() => client.request(123), 'method');
  await refuses(() => client.request('_mock/echo', circular), 'params');
  await refuses(() => client.request('_mock/echo', { n: 1n }), 'params');
  await refuses(() => client.request('_mock/echo', {}, { timeoutMs: 'soon' }), 'options.timeoutMs');
  await refuses(() => client.request('_mock/echo', {}, { signal: 'stop' }), 'options.signal');
  await refuses(() => client.request('_mock/echo', {}, 5), 'options');
  await refuses(() => client.notify(7), 'method');
  await refuses(() => client.cancel(42), 'params');
  await refuses(() => client.cancel({}), 'params.sessionId');
  await refuses(() => client.prompt(null), 'params');
  await refuses(() => client.prompt({ sessionId, prompt: 42 }), 'params.prompt');
  await refuses(() => client.prompt({ prompt: 'hi' }), 'params.sessionId');
  await refuses(() => client.newSession({ cwd: 'relative/dir' }), 'params.cwd');
  await refuses(() => client.loadSession({ cwd: '/abs' }), 'params.sessionId');
  await refuses(() => client.closeSession('s'), 'params');
  await refuses(() => client.setSessionMode({ sessionId }), 'params.modeId');
  await refuses(() => client.authenticate(), 'params');
  await refuses(() => client.initialize({ protocolVersion: 2 }), 'params.protocolVersion');
  await refuses(() => client.saveHistory(3), 'path');
  assert.equal(traced.filter((r) => r.direction === 'send').length, sentBefore, 'nothing was sent');
  // Registration is synchronous: it throws the same typed error.
  assert.throws(() => client.onRequest('x', 'not a function'), {
    code: 'ERR_ACP_INVALID_ARGUMENT',
    argument: 'handler',
  });
  assert.throws(() => client.updates(5), { code: 'ERR_ACP_INVALID_ARGUMENT', argument: 'sessionId' });
  // The client still works.
  assert.equal((await client.prompt({ sessionId, prompt: 'text:1' })).stopReason, 'end_turn');
  await client.close();
});

test('bad options throw ERR_ACP_INVALID_ARGUMENT from the constructor and reject from connect()', async () => {
  assert.throws(() => new AcpClient({ command: 'x', requestTimeoutMs: 'soon' }), {
    code: 'ERR_ACP_INVALID_ARGUMENT',
    argument: 'options.requestTimeoutMs',
  });
  assert.throws(() => new AcpClient({ command: 'x', handlers: { 'fs/read_text_file': 1 } }), {
    code: 'ERR_ACP_INVALID_ARGUMENT',
  });
  assert.throws(() => new AcpClient(null), { code: 'ERR_ACP_INVALID_ARGUMENT', argument: 'options' });
  const pending = AcpClient.connect({ command: '' });
  assert.ok(pending instanceof Promise);
  await assert.rejects(pending, { code: 'ERR_ACP_INVALID_ARGUMENT', argument: 'options.command' });
});

test('initialize sends the protocol version it speaks; the same version passed explicitly is fine', async () => {
  const client = mockClient();
  const agent = await client.initialize({ protocolVersion: 1 });
  assert.equal(agent._meta.receivedProtocolVersion, 1);
  await client.close();
});

test('an elicitation nobody handles is answered -32601 like any unhandled request', async () => {
  const { client, sessionId, updates } = await mockSession();
  await client.prompt({ sessionId, prompt: 'request:elicitation/create' });
  assert.equal(reported(updates, 'request').error.code, -32601);
  await client.close();
});

test('no environment cleanup hook outlives its agent', async () => {
  const before = native.liveConnections();
  const clients = [mockClient(), mockClient(), mockClient()];
  assert.equal(native.liveConnections(), before + 3);
  await Promise.all(clients.map((c) => c.close()));
  assert.equal(native.liveConnections(), before);
});
