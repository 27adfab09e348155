// Real agentao: session modes, config options and the vendor model switch,
// each checked by its effect (permission prompts, the model the LLM is asked for).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { startAgentao, updates } from './helpers.mjs';

async function session(t, handlers = {}) {
  const h = await startAgentao(t, { handlers });
  await h.client.initialize();
  const created = await h.client.newSession({ cwd: h.cwd });
  return { ...h, created, sessionId: created.sessionId };
}

test('session/set_mode changes what the agent may do: full-access runs without asking, read-only blocks', async (t) => {
  const asked = [];
  const { client, sessionId, cwd, seen, llm } = await session(t, {
    'session/request_permission': (p) => {
      asked.push(p);
      return { outcome: { outcome: 'selected', optionId: 'allow_once' } };
    },
  });
  await client.setSessionMode({ sessionId, modeId: 'full-access' });
  await client.prompt({ sessionId, prompt: 'shell: touch full-access.txt' });
  assert.equal(asked.length, 0, 'full-access still asked for permission');
  assert.ok(existsSync(join(cwd, 'full-access.txt')));

  await client.setSessionMode({ sessionId, modeId: 'read-only' });
  await client.prompt({ sessionId, prompt: 'shell: touch read-only.txt' });
  assert.equal(asked.length, 0);
  assert.equal(existsSync(join(cwd, 'read-only.txt')), false, 'read-only ran a shell command');
  const toolMessage = llm.chats
    .at(-1)
    .body.messages.filter((m) => m.role === 'tool')
    .at(-1);
  assert.match(toolMessage.content, /Readonly mode/);

  // Each switch was announced to the host as a current_mode_update.
  assert.deepEqual(
    updates(seen, 'current_mode_update').map((u) => u.currentModeId),
    ['full-access', 'read-only'],
  );
  await client.close();
});

test('session/set_config_option "model": the next LLM call asks for the new model', async (t) => {
  const { client, sessionId, llm } = await session(t);
  const result = await client.setSessionConfigOption({ sessionId, configId: 'model', value: 'openai/other-model' });
  const model = result.configOptions.find((o) => o.id === 'model');
  assert.equal(model.currentValue, 'openai/other-model');
  await client.prompt({ sessionId, prompt: 'hello' });
  assert.equal(llm.chats.at(-1).body.model, 'other-model');
  await client.close();
});

test('_agentao.cn/set_model through the generic request(): the next LLM call uses it', async (t) => {
  const { client, sessionId, llm } = await session(t);
  assert.deepEqual(await client.request('_agentao.cn/set_model', { sessionId, model: 'third-model' }), {
    model: 'third-model',
  });
  await client.prompt({ sessionId, prompt: 'hello' });
  assert.equal(llm.chats.at(-1).body.model, 'third-model');

  // Its params are strict: an unknown field is a typed -32602 on the host side.
  await assert.rejects(client.request('_agentao.cn/set_model', { sessionId, modelId: 'x' }), (err) => {
    assert.equal(err.code, 'ERR_ACP_RPC');
    assert.equal(err.rpcCode, -32602);
    assert.equal(err.method, '_agentao.cn/set_model');
    return true;
  });
  await client.close();
});
