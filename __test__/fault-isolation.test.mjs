// Every host callback runs isolated: a throw is reported (handlerError,
// status().lastError, the logger) and never loses an item, a batch
// acknowledgement, close() or the restart policy.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { mockClient, mockSession, agentText, reported, collectWarnings } from './helpers.mjs';

const boom = (where) => () => {
  throw new Error(`boom in ${where}`);
};

test('throwing listeners of every event, trace, logger and handlers: the turn completes, nothing is lost, close() resolves', async () => {
  const faults = [];
  const logged = [];
  let armed = false; // set once the handlerError listener is on
  const { client, sessionId, updates } = await mockSession(
    {
      trace: () => {
        if (armed) throw new Error('boom in trace');
      },
      logger: (record) => {
        if (record.target === 'acp_native::host') logged.push(record.fields.where);
        if (armed) throw new Error('boom in logger');
      },
      logLevel: 'debug',
      handlers: { '_x/ask': boom('request handler'), 'session/request_permission': boom('permission handler') },
    },
    ['--banner'],
  );
  client.on('handlerError', (_err, where) => faults.push(where));
  armed = true;
  for (const event of ['state', 'stderr', 'protocolNoise', 'protocolError', 'exit']) client.on(event, boom(event));
  client.onNotification('session/update', boom('update handler'));
  client.onNotification('*', boom('catch-all'));
  // Small batches: the throws land mid-batch and across many batches.
  const result = await client.prompt({
    sessionId,
    prompt: 'text:1 noise stderr:20 notify:_v/x request:_x/ask burst:300 say:end permission',
  });
  // The throwing permission handler answers cancelled, which ends the turn.
  assert.equal(result.stopReason, 'cancelled');
  // Every update reached the collecting handler, in order, after the throwing ones.
  const bursts = updates.filter((u) => u.content?.text?.startsWith('b')).length;
  assert.equal(bursts, 300);
  assert.ok(agentText(updates).includes('b298b299end'));
  assert.deepEqual(reported(updates, 'permission').result, { outcome: { outcome: 'cancelled' } });
  assert.equal(reported(updates, 'request').error.code, -32603);
  // Log records travel on their own native callback: wait for the logger's turn.
  while (!faults.includes('logger')) await new Promise((r) => setTimeout(r, 10));
  for (const where of [
    'trace',
    'state listener',
    'protocolNoise listener',
    'session/update',
    '_v/x',
    '_x/ask',
    'session/request_permission',
    'logger',
  ]) {
    assert.ok(faults.includes(where), `${where} reported (got ${[...new Set(faults)]})`);
  }
  assert.equal(client.status().lastError.code, 'ERR_ACP_HANDLER');
  assert.ok(logged.includes('_x/ask'), 'faults are logged to the client logger');
  // The exit listener throws too: close() still resolves, closed too.
  const exit = await client.close();
  assert.equal(exit.reason, 'closed');
  assert.equal(await client.closed, exit);
  assert.ok(faults.includes('exit listener'));
});

test('a throwing exit listener does not stop the restart policy', async () => {
  const client = mockClient({ restart: { backoffMs: 1, maxRestarts: 1 } });
  client.on('handlerError', () => {});
  client.on('exit', boom('exit'));
  await client.initialize();
  const { sessionId } = await client.newSession();
  const restarted = once(client, 'restart');
  await assert.rejects(client.prompt({ sessionId, prompt: 'crash:4' }), { code: 'ERR_ACP_CLOSED' });
  const [{ attempt }] = await restarted;
  assert.equal(attempt, 1);
  await client.initialize();
  await client.close();
});

test('a throwing handlerError listener is not fatal either', async () => {
  const warnings = await collectWarnings('AcpHandlerWarning', async () => {
    const { client, sessionId } = await mockSession();
    client.on('handlerError', boom('handlerError'));
    client.onSessionUpdate(boom('update'));
    assert.equal((await client.prompt({ sessionId, prompt: 'text:3' })).stopReason, 'end_turn');
    await client.close();
  });
  assert.ok(warnings.some((m) => m.includes('handlerError listener threw')));
});
