// Real agentao: handshake, session/new and the kinds of streamed turn a
// host renders (text, reasoning, plan).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startAgentao, updates, agentText } from './helpers.mjs';

test('initialize: capabilities and the _meta extension list; session/new with a temp cwd', async (t) => {
  const { client, cwd, llm } = await startAgentao(t);
  const init = await client.initialize();
  assert.equal(init.protocolVersion, 1);
  assert.equal(init.agentInfo.name, 'agentao');
  assert.equal(init.agentInfo.version, '0.5.17');
  assert.equal(init.agentCapabilities.loadSession, true);
  assert.equal(init.agentCapabilities.promptCapabilities.image, true);
  assert.deepEqual(init.agentCapabilities.mcpCapabilities, { http: true, sse: true });
  const extensions = init._meta['_agentao.cn/extensions'].map((e) => e.method);
  assert.ok(extensions.includes('_agentao.cn/ask_user'), `extensions: ${extensions}`);
  assert.equal(client.agent, init);

  const session = await client.newSession({ cwd });
  assert.match(session.sessionId, /^sess_[0-9a-f]{32}$/);
  // Vendor fields the client passes through untouched.
  assert.equal(session.modes.currentModeId, 'workspace-write');
  assert.deepEqual(
    session.modes.availableModes.map((m) => m.id),
    ['read-only', 'workspace-write', 'full-access', 'plan'],
  );
  const model = session.configOptions.find((o) => o.id === 'model');
  assert.equal(model.currentValue, `openai/${llm.model}`);
  const exit = await client.close();
  assert.equal(exit.exitCode, 0);
  assert.equal(exit.reason, 'closed');
});

test('a streamed text turn arrives in order, before the prompt resolves', async (t) => {
  const { client, seen, cwd, llm } = await startAgentao(t);
  await client.initialize();
  const { sessionId } = await client.newSession({ cwd });
  const result = await client.prompt({ sessionId, prompt: 'greet me warmly please' });
  assert.deepEqual(result, { stopReason: 'end_turn' });
  // The fake LLM streamed the reply in several chunks; all of them were
  // delivered before prompt() resolved, in order, for this session.
  const chunks = updates(seen, 'agent_message_chunk');
  assert.ok(chunks.length >= 2, `expected several chunks, got ${chunks.length}`);
  assert.equal(agentText(seen), 'Hello! You said: greet me warmly please');
  assert.ok(seen.every((e) => e.sessionId === sessionId));
  // agentao's extra field survives (clients must keep unknown fields).
  assert.equal(chunks[0].schema_version, 1);
  // The prompt reached the model as the user's message.
  const request = llm.chats.at(-1).body;
  assert.equal(request.stream, true);
  assert.match(request.messages.at(-1).content, /greet me warmly please/);
  await client.close();
});

test('a reasoning turn: reasoning_content arrives as agent_thought_chunk before the answer', async (t) => {
  const { client, seen, cwd } = await startAgentao(t);
  await client.initialize();
  const { sessionId } = await client.newSession({ cwd });
  assert.equal((await client.prompt({ sessionId, prompt: 'think' })).stopReason, 'end_turn');
  const kinds = updates(seen).map((u) => u.sessionUpdate);
  const firstMessage = kinds.indexOf('agent_message_chunk');
  assert.ok(
    kinds.indexOf('agent_thought_chunk') >= 0 && kinds.indexOf('agent_thought_chunk') < firstMessage,
    kinds.join(),
  );
  const thought = updates(seen, 'agent_thought_chunk')
    .map((u) => u.content.text)
    .join('');
  assert.equal(thought, 'The user wants me to think. Considering options carefully.');
  assert.equal(agentText(seen), 'Thought it through.');
  await client.close();
});

test('a plan: the model calls todo_write and the host gets a plan update', async (t) => {
  const { client, seen, cwd, llm } = await startAgentao(t);
  await client.initialize();
  const { sessionId } = await client.newSession({ cwd });
  assert.equal((await client.prompt({ sessionId, prompt: 'plan' })).stopReason, 'end_turn');
  const plans = updates(seen, 'plan');
  assert.equal(plans.length, 1);
  assert.deepEqual(
    plans[0].entries.map(({ content, status }) => ({ content, status })),
    [
      { content: 'Write the parser', status: 'in_progress' },
      { content: 'Test the parser', status: 'pending' },
    ],
  );
  // The tool result went back to the model, which then finished the turn.
  const followUp = llm.chats.at(-1).body.messages.find((m) => m.role === 'tool');
  assert.equal(followUp.name, 'todo_write');
  assert.equal(agentText(seen), 'Plan recorded.');
  await client.close();
});
