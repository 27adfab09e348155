import { test } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { mockClient, alive, identify } from './helpers.mjs';

test('restart policy (opt-in): respawns after a crash, runs the hook, gives up after maxRestarts', async () => {
  const restarts = [];
  const client = mockClient({
    restart: { maxRestarts: 2, windowMs: 60_000, backoffMs: 10 },
    // The host re-initializes and re-creates its session here.
    onRestart: async (c, { attempt }) => {
      await c.initialize();
      const { sessionId } = await c.newSession();
      restarts.push({ attempt, sessionId, pid: c.pid });
    },
  });
  await client.initialize();
  const first = await client.newSession();
  // Identities, not bare pids: a dead agent's pid may be given to another process.
  const pids = [identify(client.pid)];
  for (let round = 1; round <= 2; round++) {
    const restarted = once(client, 'restart');
    await assert.rejects(client.prompt({ sessionId: first.sessionId, prompt: 'crash:5' }), {
      code: 'ERR_ACP_CLOSED',
      exitCode: 5,
    });
    const [{ attempt, exit }] = await restarted;
    assert.equal(attempt, round);
    assert.equal(exit.exitCode, 5);
    while (restarts.length < round) await new Promise((r) => setTimeout(r, 10));
    assert.equal(client.exitInfo, null);
    pids.push(identify(client.pid));
    assert.notDeepEqual(pids[round], pids[round - 1], 'a new process (the pid alone may be reused)');
    assert.equal(alive(pids[round - 1]), false);
  }
  // A third crash within the window exceeds the budget.
  const failed = once(client, 'restartFailed');
  await assert.rejects(client.prompt({ sessionId: restarts[1].sessionId, prompt: 'crash:6' }), {
    code: 'ERR_ACP_CLOSED',
  });
  const [{ reason }] = await failed;
  assert.match(reason, /2 restarts/);
  assert.equal((await client.closed).exitCode, 6, 'closed resolves once the policy gives up');
});

test('no restart after close(), and none by default', async () => {
  const client = mockClient({ restart: { backoffMs: 1 } });
  let restarted = false;
  client.on('restart', () => (restarted = true));
  await client.initialize();
  await client.close();
  const plain = mockClient();
  plain.on('restart', () => (restarted = true));
  await plain.initialize();
  const { sessionId } = await plain.newSession();
  await assert.rejects(plain.prompt({ sessionId, prompt: 'crash:1' }), { code: 'ERR_ACP_CLOSED' });
  await new Promise((r) => setTimeout(r, 100));
  assert.equal(restarted, false);
});
