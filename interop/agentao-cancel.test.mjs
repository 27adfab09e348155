// Real agentao: session/cancel. agentao ends a streaming turn `cancelled`,
// but it does not release a permission or ask_user request it is waiting
// on: the client must answer those itself or the turn never ends.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { startAgentao, agentText } from './helpers.mjs';

/** A handler that never answers on its own: it waits until the client aborts it. */
function waitForAbort(aborted) {
  return (_params, { signal }) =>
    new Promise((_, reject) => {
      signal.addEventListener('abort', () => {
        aborted.push(signal.reason);
        reject(signal.reason);
      });
    });
}

async function session(t, handlers) {
  const h = await startAgentao(t, { handlers });
  await h.client.initialize();
  const { sessionId } = await h.client.newSession({ cwd: h.cwd });
  return { ...h, sessionId };
}

test('cancel during a slow stream ends the turn cancelled', async (t) => {
  const { client, sessionId, waitFor, seen } = await session(t, {});
  // The fake LLM streams this answer until the agent hangs up.
  const turn = client.prompt({ sessionId, prompt: 'slow' });
  await waitFor((e) => e.kind === 'update' && e.update.sessionUpdate === 'agent_message_chunk');
  assert.equal(await client.cancel(sessionId), 0, 'no agent request was pending');
  assert.deepEqual(await turn, { stopReason: 'cancelled' });
  // Streamed text up to the cancel reached the host (how much depends on when agentao stops).
  assert.ok(agentText(seen).startsWith('Starting a long '), agentText(seen));
  // The session is usable again.
  assert.deepEqual(await client.prompt({ sessionId, prompt: 'are you still there' }), { stopReason: 'end_turn' });
  assert.match(agentText(seen), /You said: are you still there$/);
  await client.close();
});

test('cancel while a permission request is pending: the client answers it and the turn ends cancelled', async (t) => {
  const aborted = [];
  const { client, sessionId, waitFor, cwd } = await session(t, { 'session/request_permission': waitForAbort(aborted) });
  const turn = client.prompt({ sessionId, prompt: 'shell: touch never.txt' });
  await waitFor((e) => e.kind === 'request' && e.method === 'session/request_permission');
  // One request answered `cancelled` on the host's behalf; the handler's signal fired.
  assert.equal(await client.cancel(sessionId), 1);
  assert.deepEqual(await turn, { stopReason: 'cancelled' });
  assert.equal(aborted.length, 1);
  assert.equal(aborted[0].code, 'ERR_ACP_ABORTED');
  assert.equal(existsSync(join(cwd, 'never.txt')), false, 'the command ran although the turn was cancelled');
  assert.deepEqual(await client.prompt({ sessionId, prompt: 'hello again' }), { stopReason: 'end_turn' });
  await client.close();
});

test('cancel while ask_user is pending: answered {outcome: cancelled}, the turn ends cancelled', async (t) => {
  const aborted = [];
  const { client, sessionId, waitFor } = await session(t, { '_agentao.cn/ask_user': waitForAbort(aborted) });
  const turn = client.prompt({ sessionId, prompt: 'ask: Which database?' });
  await waitFor((e) => e.kind === 'request' && e.method === '_agentao.cn/ask_user');
  assert.equal(await client.cancel(sessionId), 1);
  assert.deepEqual(await turn, { stopReason: 'cancelled' });
  assert.equal(aborted.length, 1);
  await client.close();
});
