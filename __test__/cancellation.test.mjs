// One cancellation model: a timeout and an abort both cancel on the wire
// ($/cancel_request; for a prompt, session/cancel too), and the agent's
// late answer to a request we gave up on is no protocol error.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mockSession } from './helpers.mjs';

async function received(client) {
  return (await client.request('_mock/received')).received.map((m) => [m.method, m.params]);
}

for (const how of ['timeout', 'abort']) {
  test(`a prompt given up by ${how} sends $/cancel_request and session/cancel; the late answer is traced, not an error`, async () => {
    const traced = [];
    const { client, sessionId } = await mockSession({ trace: (r) => traced.push(r) });
    const protocolErrors = [];
    client.on('protocolError', (e) => protocolErrors.push(e));
    const controller = new AbortController();
    const options = how === 'timeout' ? { timeoutMs: 200 } : { signal: controller.signal };
    const turn = client.prompt({ sessionId, prompt: 'text:1 wait-cancel' }, options);
    if (how === 'abort') setTimeout(() => controller.abort(), 100);
    await assert.rejects(turn, { code: how === 'timeout' ? 'ERR_ACP_TIMEOUT' : 'ERR_ACP_ABORTED' });
    // The agent heard both, and answers the cancelled turn (late).
    let late;
    while (
      !(late = traced.find(
        (r) => r.direction === 'receive' && r.kind === 'response' && r.payload.includes('"cancelled"'),
      ))
    ) {
      await new Promise((r) => setTimeout(r, 10));
    }
    const seen = await received(client);
    const cancelRequest = seen.find(([m]) => m === '$/cancel_request');
    assert.ok(cancelRequest, 'sent $/cancel_request');
    assert.equal(String(cancelRequest[1].requestId), late.id.toString());
    assert.deepEqual(
      seen.find(([m]) => m === 'session/cancel'),
      ['session/cancel', { sessionId }],
    );
    assert.deepEqual(protocolErrors, []);
    // The session takes a new turn.
    assert.equal((await client.prompt({ sessionId, prompt: 'text:1' })).stopReason, 'end_turn');
    await client.close();
  });
}

test('a timed-out plain request is cancelled on the wire too', async () => {
  const { client } = await mockSession();
  await assert.rejects(client.request('_mock/never', {}, { timeoutMs: 50 }), { code: 'ERR_ACP_TIMEOUT' });
  const seen = await received(client);
  assert.ok(seen.some(([m]) => m === '$/cancel_request'));
  await client.close();
});
