// Real agentao: agent → host requests answered by host handlers —
// session/request_permission (via run_shell_command) and the
// _agentao.cn/ask_user extension.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { startAgentao, updates, agentText } from './helpers.mjs';

/** A permission handler that always picks `optionId` and counts its calls. */
function choose(optionId, calls) {
  return (params) => {
    calls.push(params);
    return { outcome: { outcome: 'selected', optionId } };
  };
}

async function sessionWith(t, handlers) {
  const h = await startAgentao(t, { handlers });
  await h.client.initialize();
  const { sessionId } = await h.client.newSession({ cwd: h.cwd });
  return { ...h, sessionId };
}

test('allow_once: the shell command runs and its effect is on disk', async (t) => {
  const calls = [];
  const { client, seen, cwd, sessionId } = await sessionWith(t, {
    'session/request_permission': choose('allow_once', calls),
  });
  const result = await client.prompt({ sessionId, prompt: 'shell: touch allowed-once.txt' });
  assert.equal(result.stopReason, 'end_turn');
  assert.equal(calls.length, 1);
  const [request] = calls;
  assert.equal(request.sessionId, sessionId);
  assert.equal(request.toolCall.title, 'run_shell_command');
  assert.deepEqual(request.toolCall.rawInput, { command: 'touch allowed-once.txt' });
  assert.deepEqual(
    request.options.map((o) => [o.optionId, o.kind]),
    [
      ['allow_once', 'allow_once'],
      ['allow_always', 'allow_always'],
      ['reject_once', 'reject_once'],
      ['reject_always', 'reject_always'],
    ],
  );
  assert.ok(existsSync(join(cwd, 'allowed-once.txt')), 'the allowed command did not run');
  // The host saw the tool call announced (pending) before being asked, and completed after.
  const toolId = request.toolCall.toolCallId;
  const order = seen
    .filter((e) => (e.kind === 'update' && e.update.toolCallId === toolId) || e.kind === 'request')
    .map((e) => (e.kind === 'request' ? 'asked' : `${e.update.sessionUpdate}:${e.update.status ?? '-'}`));
  assert.equal(order[0], 'tool_call:pending');
  assert.equal(order[1], 'asked');
  assert.equal(order.at(-1), 'tool_call_update:completed');
  await client.close();
});

test('reject_once: the shell command does not run and the model is told', async (t) => {
  const calls = [];
  const { client, seen, cwd, sessionId, llm } = await sessionWith(t, {
    'session/request_permission': choose('reject_once', calls),
  });
  const result = await client.prompt({ sessionId, prompt: 'shell: touch rejected.txt' });
  assert.equal(result.stopReason, 'end_turn');
  assert.equal(calls.length, 1);
  assert.equal(existsSync(join(cwd, 'rejected.txt')), false, 'a rejected command ran');
  const toolId = calls[0].toolCall.toolCallId;
  const last = updates(seen, 'tool_call_update')
    .filter((u) => u.toolCallId === toolId)
    .at(-1);
  assert.equal(last.status, 'failed');
  const toolMessage = llm.chats
    .at(-1)
    .body.messages.filter((m) => m.role === 'tool')
    .at(-1);
  assert.match(toolMessage.content, /declined: 'run_shell_command' needed approval and was not approved/);
  assert.match(agentText(seen), /^Shell tool said: /);
  await client.close();
});

test('allow_always is remembered for the next call in the same session, not in another session', async (t) => {
  const calls = [];
  const { client, cwd, sessionId } = await sessionWith(t, {
    'session/request_permission': choose('allow_always', calls),
  });
  await client.prompt({ sessionId, prompt: 'shell: touch first.txt' });
  assert.equal(calls.length, 1);
  assert.ok(existsSync(join(cwd, 'first.txt')));

  await client.prompt({ sessionId, prompt: 'shell: touch second.txt' });
  assert.equal(calls.length, 1, 'asked again after allow_always');
  assert.ok(existsSync(join(cwd, 'second.txt')), 'the remembered permission did not run the command');

  // The rule is per session: a new session asks again.
  const other = await client.newSession({ cwd });
  await client.prompt({ sessionId: other.sessionId, prompt: 'shell: touch third.txt' });
  assert.equal(calls.length, 2);
  assert.equal(calls[1].sessionId, other.sessionId);
  await client.close();
});

test('writing an ordinary file needs no permission in the default mode', async (t) => {
  const calls = [];
  const { client, seen, cwd, sessionId } = await sessionWith(t, {
    'session/request_permission': choose('allow_once', calls),
  });
  await client.prompt({ sessionId, prompt: 'write: notes.txt written by the agent' });
  assert.equal(calls.length, 0);
  assert.equal(readFileSync(join(cwd, 'notes.txt'), 'utf8'), 'written by the agent');
  const tool = updates(seen, 'tool_call')[0];
  assert.equal(tool.title, 'write_file');
  assert.equal(tool.kind, 'edit');
  await client.close();
});

test('_agentao.cn/ask_user is answered by a host handler and the answer reaches the model', async (t) => {
  const questions = [];
  const { client, seen, sessionId, llm } = await sessionWith(t, {
    '_agentao.cn/ask_user': ({ sessionId: sid, question }) => {
      questions.push({ sid, question });
      return { outcome: 'answered', text: 'teal, definitely' };
    },
  });
  const result = await client.prompt({ sessionId, prompt: 'ask: What is your favourite colour?' });
  assert.equal(result.stopReason, 'end_turn');
  assert.deepEqual(questions, [{ sid: sessionId, question: 'What is your favourite colour?' }]);
  // The fake LLM received the answer as the ask_user tool result…
  const followUp = await llm.received((r) => r.body?.messages?.some((m) => m.role === 'tool' && m.name === 'ask_user'));
  const toolMessage = followUp.body.messages.find((m) => m.role === 'tool' && m.name === 'ask_user');
  assert.match(toolMessage.content, /teal, definitely/);
  // …and the model's reply quoting it reached the host.
  assert.match(agentText(seen), /teal, definitely/);
  await client.close();
});

test('ask_user answered in the documented {answer} shape is taken as "user unavailable"', async (t) => {
  // agentao's docs show {answer}; the real server only accepts {outcome, text}.
  const { client, sessionId, llm } = await sessionWith(t, {
    '_agentao.cn/ask_user': () => ({ answer: 'teal' }),
  });
  await client.prompt({ sessionId, prompt: 'ask: What is your favourite colour?' });
  const toolMessage = llm.chats.at(-1).body.messages.find((m) => m.role === 'tool' && m.name === 'ask_user');
  assert.equal(toolMessage.content, '(user unavailable)');
  await client.close();
});
