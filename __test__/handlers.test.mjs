import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mockSession, reported, collectWarnings } from './helpers.mjs';
import { RpcError } from '../index.mjs';

const CANCELLED = { outcome: { outcome: 'cancelled' } };

async function permissionWith(handler, options = {}) {
  const { client, sessionId, updates } = await mockSession({
    ...options,
    handlers: { 'session/request_permission': handler },
  });
  const result = await client.prompt({ sessionId, prompt: 'permission' });
  const reply = reported(updates, 'permission');
  const toolStatus = updates.filter((u) => u.toolCallId === 'call_shell').at(-1).status;
  await client.close();
  return { result, reply, toolStatus };
}

test('permission: allow runs the tool', async () => {
  let seen;
  const { result, reply, toolStatus } = await permissionWith((params) => {
    seen = params;
    return { outcome: { outcome: 'selected', optionId: 'allow_once' } };
  });
  assert.equal(seen.toolCall.title, 'Run `rm -rf build`');
  assert.deepEqual(
    seen.options.map((o) => o.optionId),
    ['allow_once', 'allow_always', 'reject_once', 'reject_always'],
  );
  assert.deepEqual(reply.result, { outcome: { outcome: 'selected', optionId: 'allow_once' } });
  assert.equal(toolStatus, 'completed');
  assert.equal(result.stopReason, 'end_turn');
});

test('permission: an async reject is passed on', async () => {
  const { reply, toolStatus } = await permissionWith(async () => {
    await new Promise((r) => setTimeout(r, 20));
    return { outcome: { outcome: 'selected', optionId: 'reject_once' } };
  });
  assert.deepEqual(reply.result.outcome, { outcome: 'selected', optionId: 'reject_once' });
  assert.equal(toolStatus, 'failed');
});

test('permission: a throwing handler answers cancelled, never an error', async () => {
  let reply, result;
  // No handlerError listener: the fault is a process warning.
  const warnings = await collectWarnings('AcpHandlerWarning', async () => {
    ({ reply, result } = await permissionWith(() => {
      throw new Error('UI crashed');
    }));
  });
  assert.ok(
    warnings.some((m) => m.includes('UI crashed')),
    JSON.stringify(warnings),
  );
  assert.deepEqual(reply.result, CANCELLED);
  assert.equal(reply.error, undefined);
  assert.equal(result.stopReason, 'cancelled');
});

test('permission: a thrown (or rejected) RpcError answers cancelled and is no fault; any other throw answers cancelled and is reported', async () => {
  for (const chosen of [
    () => {
      throw new RpcError(-32001, 'denied by policy', { rule: 'no-rm' });
    },
    async () => Promise.reject(new RpcError(-32001, 'denied by policy', { rule: 'no-rm' })),
  ]) {
    const faults = [];
    const { client, sessionId, updates } = await mockSession({ handlers: { 'session/request_permission': chosen } });
    client.on('handlerError', (err) => faults.push(err));
    await client.prompt({ sessionId, prompt: 'permission' });
    const reply = reported(updates, 'permission');
    assert.deepEqual(reply.result, CANCELLED);
    assert.equal(reply.error, undefined);
    assert.deepEqual(faults, [], 'a chosen answer is no fault');
    await client.close();
  }
  const faults = [];
  const { client, sessionId, updates } = await mockSession({
    handlers: {
      'session/request_permission': () => {
        throw new Error('UI crashed');
      },
    },
  });
  client.on('handlerError', (err, where) => faults.push([err.message, where]));
  await client.prompt({ sessionId, prompt: 'permission' });
  assert.deepEqual(reported(updates, 'permission').result, CANCELLED);
  assert.deepEqual(faults, [['UI crashed', 'session/request_permission']]);
  await client.close();
});

test('permission: a rejected promise answers cancelled', async () => {
  let reply;
  const warnings = await collectWarnings('AcpHandlerWarning', async () => {
    ({ reply } = await permissionWith(() => Promise.reject(new Error('dialog closed'))));
  });
  assert.ok(
    warnings.some((m) => m.includes('dialog closed')),
    JSON.stringify(warnings),
  );
  assert.deepEqual(reply.result, CANCELLED);
});

test('permission: garbage results answer cancelled', async () => {
  for (const garbage of [
    undefined,
    42,
    'allow',
    { outcome: 'selected' },
    { outcome: { outcome: 'selected' } },
    () => 1,
  ]) {
    const { reply } = await permissionWith(() => garbage);
    assert.deepEqual(reply.result, CANCELLED, JSON.stringify(garbage));
  }
});

test('permission: a handler that never answers is cancelled at handlerTimeoutMs, and its signal aborts', async () => {
  let signal;
  const { reply, result } = await permissionWith(
    (_params, ctx) => {
      signal = ctx.signal;
      return new Promise(() => {});
    },
    { handlerTimeoutMs: 150 },
  );
  assert.deepEqual(reply.result, CANCELLED);
  assert.equal(result.stopReason, 'cancelled');
  assert.equal(signal.aborted, true);
});

test('an extension request is answered by its handler (agentao ask_user)', async () => {
  let asked;
  const { client, sessionId, updates } = await mockSession({
    handlers: {
      '_agentao.cn/ask_user': async (params) => {
        asked = params;
        return { outcome: 'answered', text: 'use tabs' };
      },
    },
  });
  await client.prompt({ sessionId, prompt: 'ext:_agentao.cn/ask_user' });
  assert.equal(asked.question, 'Proceed?');
  assert.equal(asked.sessionId, sessionId);
  assert.deepEqual(reported(updates, 'ext').result, { outcome: 'answered', text: 'use tabs' });
  await client.close();
});

test('an elicitation always gets an outcome, whatever RpcError its handler chooses (the core owns the rule)', async () => {
  const faults = [];
  for (const code of [-32601, -32001]) {
    const { client, sessionId, updates } = await mockSession({
      handlers: {
        'elicitation/create': () => {
          throw new RpcError(code, 'not now');
        },
      },
    });
    client.on('handlerError', (err) => faults.push(err));
    await client.prompt({ sessionId, prompt: 'request:elicitation/create' });
    const reply = reported(updates, 'request');
    assert.deepEqual([code, reply.result, reply.error], [code, { action: 'cancel' }, undefined]);
    await client.close();
  }
  assert.deepEqual(faults, [], 'a chosen answer is no fault');
});

test('handler errors: other methods get a JSON-RPC error, RpcError picks the code', async () => {
  const { client, sessionId, updates } = await mockSession({
    handlers: {
      '_x/plain': () => {
        throw new Error('disk on fire');
      },
      '_x/typed': () => Promise.reject(new RpcError(-32002, 'Resource not found', { path: '/nope' })),
    },
  });
  const faults = [];
  client.on('handlerError', (err, where) => faults.push([err.message, where]));
  await client.prompt({ sessionId, prompt: 'request:_x/plain' });
  // A fault is the host's bug: reported to the host, not its message to the agent.
  assert.deepEqual(reported(updates, 'request').error, {
    code: -32603,
    message: 'Internal error: the handler for _x/plain failed',
  });
  assert.deepEqual(faults, [['disk on fire', '_x/plain']]);
  assert.equal(client.status().lastError.code, 'ERR_ACP_HANDLER');
  await client.prompt({ sessionId, prompt: 'request:_x/typed' });
  assert.deepEqual(reported(updates, 'request').error, {
    code: -32002,
    message: 'Resource not found',
    data: { path: '/nope' },
  });
  assert.equal(faults.length, 1, 'an RpcError is an answer, not a fault');
  await client.close();
});

test('a request nobody handles is answered -32601', async () => {
  const { client, sessionId, updates } = await mockSession();
  await client.prompt({ sessionId, prompt: 'request:_vendor/unknown' });
  const reply = reported(updates, 'request');
  assert.equal(reply.error.code, -32601);
  assert.match(reply.error.message, /_vendor\/unknown/);
  await client.close();
});

test('cancel() with a pending permission answers it cancelled and the turn ends cancelled', async () => {
  let signal;
  let sawRequest;
  const asked = new Promise((resolve) => (sawRequest = resolve));
  const { client, sessionId, updates } = await mockSession({
    handlers: {
      'session/request_permission': (_p, ctx) => {
        signal = ctx.signal;
        sawRequest();
        return new Promise(() => {}); // the user never clicks
      },
    },
  });
  const turn = client.prompt({ sessionId, prompt: 'permission text:1' });
  await asked;
  assert.equal(await client.cancel(sessionId), 1);
  assert.deepEqual(await turn, { stopReason: 'cancelled' });
  assert.deepEqual(reported(updates, 'permission').result, CANCELLED);
  assert.equal(signal.aborted, true);
  const { received } = await client.request('_mock/received');
  assert.deepEqual(received.at(-1), { jsonrpc: '2.0', method: 'session/cancel', params: { sessionId } });
  await client.close();
});

test('cancel() during a streaming turn without open requests', async () => {
  const { client, sessionId } = await mockSession();
  const turn = client.prompt({ sessionId, prompt: 'text:1 wait-cancel text:1' });
  await new Promise((r) => setTimeout(r, 50));
  assert.equal(await client.cancel({ sessionId }), 0);
  assert.deepEqual(await turn, { stopReason: 'cancelled' });
  await client.close();
});

test('notification handlers: per method, catch-all, and a throwing one does not break delivery', async () => {
  const seen = [];
  const errors = [];
  const { client, sessionId } = await mockSession({
    onNotification: (params, { method }) => seen.push([method, params.sessionId]),
  });
  client.on('handlerError', (err, where) => errors.push([err.message, where]));
  const sub = client.onNotification('_vendor/hello', () => {
    throw new Error('listener bug');
  });
  await client.prompt({ sessionId, prompt: 'notify:_vendor/hello text:1' });
  assert.deepEqual(seen, [
    ['_vendor/hello', sessionId],
    ['session/update', sessionId],
  ]);
  assert.deepEqual(errors, [['listener bug', '_vendor/hello']]);
  sub.dispose();
  await client.prompt({ sessionId, prompt: 'notify:_vendor/hello' });
  assert.equal(errors.length, 1);
  await client.close();
});
