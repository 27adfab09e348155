import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mockClient, mockSession, alive, identify } from './helpers.mjs';
import { AcpClient, AcpError } from '../index.mjs';

test('an agent crash mid-prompt rejects the prompt with ERR_ACP_CLOSED, exit code and stderr tail', async () => {
  const { client, sessionId } = await mockSession();
  const exits = [];
  client.on('exit', (info) => exits.push(info));
  await assert.rejects(client.prompt({ sessionId, prompt: 'text:2 crash:3' }), (err) => {
    assert.ok(err instanceof AcpError);
    assert.equal(err.code, 'ERR_ACP_CLOSED');
    assert.equal(err.exitCode, 3);
    assert.equal(err.signal, null);
    assert.equal(err.method, 'session/prompt');
    assert.match(err.stderrTail, /crashing on purpose with code 3/);
    return true;
  });
  assert.equal(exits.length, 1);
  assert.equal(exits[0].reason, 'exited');
  // Later calls fail at once, with the same report.
  await assert.rejects(client.newSession(), { code: 'ERR_ACP_CLOSED', exitCode: 3 });
  await assert.rejects(client.notify('x'), { code: 'ERR_ACP_CLOSED' });
  assert.deepEqual(await client.close(), exits[0]);
});

test('an agent that cannot be spawned throws ERR_ACP_SPAWN with errno', () => {
  assert.throws(
    () => new AcpClient({ command: '/definitely/not/an/agent' }),
    (err) => {
      assert.equal(err.code, 'ERR_ACP_SPAWN');
      assert.equal(err.errno, 'ENOENT');
      assert.match(err.message, /\/definitely\/not\/an\/agent/);
      return true;
    },
  );
  assert.throws(() => new AcpClient({ command: process.execPath, cwd: '/no/such/dir' }), {
    code: 'ERR_ACP_SPAWN',
    message: /missing directory/,
  });
  assert.throws(() => new AcpClient({}), { code: 'ERR_ACP_INVALID_ARGUMENT' });
});

test('a request that is never answered times out with ERR_ACP_TIMEOUT; the connection lives on', async () => {
  const client = mockClient();
  await client.initialize();
  await assert.rejects(client.request('_mock/never', {}, { timeoutMs: 100 }), {
    code: 'ERR_ACP_TIMEOUT',
    method: '_mock/never',
    timeoutMs: 100,
  });
  assert.deepEqual(await client.request('_mock/echo', { ok: true }), { ok: true });
  await client.close();
});

test('an AbortSignal rejects the call and tells the agent with $/cancel_request', async () => {
  const client = mockClient();
  await client.initialize();
  const controller = new AbortController();
  const call = client.request('_mock/never', {}, { signal: controller.signal });
  controller.abort();
  await assert.rejects(call, { code: 'ERR_ACP_ABORTED' });
  const { received } = await client.request('_mock/received');
  assert.equal(received.at(-1).method, '$/cancel_request');
  assert.equal(typeof received.at(-1).params.requestId, 'number');
  await assert.rejects(client.request('_mock/echo', {}, { signal: AbortSignal.abort() }), { code: 'ERR_ACP_ABORTED' });
  await client.close();
});

test('close() settles every pending call and stops a hung agent', async () => {
  const { client, sessionId } = await mockSession({ closeGraceMs: 200, termGraceMs: 200 }, [
    '--ignore-eof',
    '--ignore-sigterm',
  ]);
  const agent = identify(client.pid);
  const turn = client.prompt({ sessionId, prompt: 'hang' });
  const never = client.request('_mock/never');
  const exit = await client.close();
  assert.equal(exit.signal, 'SIGKILL');
  assert.equal(exit.reason, 'closed');
  await assert.rejects(turn, { code: 'ERR_ACP_CLOSED' });
  await assert.rejects(never, { code: 'ERR_ACP_CLOSED' });
  assert.equal(alive(agent), false);
});

test('stdout noise is reported and counted, never answered, and the turn completes', async () => {
  const noise = [];
  const { client, sessionId, updates } = await mockSession({}, ['--banner']);
  client.on('protocolNoise', (n) => noise.push(n));
  const result = await client.prompt({ sessionId, prompt: 'noise text:1 noise' });
  assert.equal(result.stopReason, 'end_turn');
  assert.equal(updates.length, 1);
  assert.equal(client.noiseLines, 3);
  assert.deepEqual(
    noise.map((n) => n.count),
    [2, 3],
  );
  assert.equal(noise[0].line, 'WARNING: something printed to stdout');
  // Nothing was written back for the noise: the agent received no parse error reply.
  const { received } = await client.request('_mock/received');
  assert.equal(received.length, 0);
  await client.close();
});

test('10 MiB of stderr before the initialize reply does not deadlock', async () => {
  const client = mockClient({}, ['--stderr-before-init', String(10 * 1024 * 1024)]);
  const init = await client.initialize();
  assert.equal(init.protocolVersion, 1);
  await client.close();
});
