// Linux and macOS: while the agent is quiet, its stdout is read on Node's
// own event loop (lib/host-stdout.js, src/host_poll.rs); the core's thread
// reads it while the agent floods, while a session view is open, and at
// its exit. What a user would notice is latency, which tests do not time:
// the structural fact behind it is asserted instead, that what the agent
// says reaches JS without a threadsafe-function call (a second thread's
// wakeup) per message. ACP_NATIVE_READ_ON_HOST=0 turns it off.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { tmpdir } from 'node:os';
import loader from '../lib/loader.js';
import { mockClient } from './helpers.mjs';

const CONNECTION_FACTORY = Symbol.for('acp-native.connectionFactory');
const allow = (p) => ({ outcome: { outcome: 'selected', optionId: p.options[0].optionId } });

test('read on the loop: round trips and a turn reach JS without a threadsafe-function call, whole and in order', {
  skip:
    (process.platform === 'win32' && 'the core reads stdout on Windows') ||
    (process.env.ACP_NATIVE_READ_ON_HOST === '0' && 'turned off by ACP_NATIVE_READ_ON_HOST=0'),
}, async () => {
  let viaThread = 0; // batches delivered through the threadsafe function
  const client = mockClient({
    handlers: { 'session/request_permission': allow },
    [CONNECTION_FACTORY]: (options, onBatch) =>
      new loader.native.AgentConnection(options, (text) => {
        viaThread++;
        onBatch(text);
      }),
  });
  await client.initialize();
  const { sessionId } = await client.newSession({ cwd: tmpdir() });
  const texts = [];
  client.onSessionUpdate((p) => {
    if (p.update.sessionUpdate === 'agent_message_chunk') texts.push(p.update.content.text);
  });
  const before = viaThread;
  for (let i = 0; i < 20; i++) await client.newSession({ cwd: tmpdir() });
  const { stopReason } = await client.prompt({ sessionId, prompt: 'text:3 permission say:done' });
  assert.equal(viaThread - before, 0, 'every answer, update and agent request was read on the loop');
  assert.equal(stopReason, 'end_turn');
  // The mock agent says what the permission answer was.
  assert.deepEqual(texts, [
    'chunk0 ',
    'chunk1 ',
    'chunk2 ',
    'permission={"jsonrpc":"2.0","id":1,"result":{"outcome":{"outcome":"selected","optionId":"allow_once"}}}',
    'done',
  ]);
  // The end still comes through the core, after everything the agent said.
  const exit = await client.close();
  assert.equal(exit.reason, 'closed');
  assert.ok(viaThread > before, 'the exit item came through the threadsafe function');
});

test('an agent that writes and exits while the host is busy: every line reaches the host before its exit, as when the core reads', {
  skip: process.platform === 'win32' && 'the core reads stdout on Windows',
}, async () => {
  const client = mockClient();
  await client.initialize();
  const { sessionId } = await client.newSession({ cwd: tmpdir() });
  const seen = [];
  client.onSessionUpdate((p) => {
    if (p.update.sessionUpdate === 'agent_message_chunk') seen.push(p.update.content.text);
  });
  const exited = new Promise((resolve) => client.on('exit', () => resolve([...seen])));
  const turn = client.prompt({ sessionId, prompt: 'text:3 crash:3' }).catch((err) => err);
  // The host's thread is busy past the exit drain's wait: the agent writes
  // and exits meanwhile, and only the core can read what it left.
  const until = Date.now() + 1500;
  while (Date.now() < until);
  assert.deepEqual(await exited, ['chunk0 ', 'chunk1 ', 'chunk2 ']);
  assert.equal((await turn).code, 'ERR_ACP_CLOSED');
});

test('with a session view open, the core reads stdout: the fold stays off the JS thread', {
  skip:
    (process.platform === 'win32' && 'the core reads stdout on Windows') ||
    (process.env.ACP_NATIVE_READ_ON_HOST === '0' && 'turned off by ACP_NATIVE_READ_ON_HOST=0'),
}, async () => {
  let onLoop = 0; // batches read on the JS thread's loop
  const client = mockClient({
    [CONNECTION_FACTORY]: (options, onBatch) => {
      const conn = new loader.native.AgentConnection(options, onBatch);
      const readHere = conn.readStdoutHere.bind(conn);
      conn.readStdoutHere = (deliver) =>
        readHere((text) => {
          onLoop++;
          deliver(text);
        });
      return conn;
    },
  });
  await client.initialize();
  const { sessionId } = await client.newSession({ cwd: tmpdir() });
  assert.ok(onLoop > 0, 'read on the loop before the view');
  const view = client.session(sessionId);
  const before = onLoop;
  const { stopReason } = await client.prompt({ sessionId, prompt: 'text:3 say:done' });
  assert.equal(stopReason, 'end_turn');
  await view.settled();
  assert.equal(onLoop - before, 0, 'nothing was read on the loop while the view was open');
  const texts = view.snapshot().entries.flatMap((e) => e.content.map((c) => c.text));
  assert.deepEqual(texts, ['chunk0 chunk1 chunk2 done']);
  // Closed, the view no longer holds the loop's reads back.
  view.close();
  for (let i = 0; i < 5; i++) await client.newSession({ cwd: tmpdir() });
  assert.ok(onLoop - before > 0, 'read on the loop again');
  await client.close();
});
