// Pure pieces of lib/, tested directly.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const { RestartPolicy } = require('../lib/restart.js');
const options = require('../lib/options.js');

test('restart policy: exponential backoff, capped, at most maxRestarts per window', () => {
  const policy = new RestartPolicy({ maxRestarts: 3, windowMs: 1000, backoffMs: 100, maxBackoffMs: 250 });
  assert.deepEqual(policy.next(0), { attempt: 1, delayMs: 100 });
  assert.deepEqual(policy.next(10), { attempt: 2, delayMs: 200 });
  assert.deepEqual(policy.next(20), { attempt: 3, delayMs: 250 });
  assert.match(policy.next(30).giveUp, /3 restarts within 1000 ms/);
  // Outside the window the budget is back.
  assert.deepEqual(policy.next(2000), { attempt: 1, delayMs: 100 });
  assert.equal(new RestartPolicy(undefined).next(0), null);
});

test('options: defaults, Infinity byte sizes, env stringified, vendor results passed to the core', () => {
  const o = options.normalize({
    command: 'a',
    env: { A: 1, B: undefined },
    traceMaxPayloadBytes: Infinity,
    requestTimeoutMs: Infinity,
  });
  assert.equal(o.initializeTimeoutMs, 30_000);
  assert.equal(o.requestTimeoutMs, 0, 'Infinity = no timeout');
  assert.deepEqual(o.env, { A: '1' });
  const n = options.nativeOptions(o, ['x']);
  assert.equal(n.traceMaxPayloadBytes, 0xffff_ffff);
  assert.deepEqual(n.hostMethods, ['x']);
  assert.equal(typeof n.cancelledResults['_agentao.cn/ask_user'], 'string');
  assert.throws(() => options.normalize({ command: 'a', historySize: -1 }), {
    code: 'ERR_ACP_INVALID_ARGUMENT',
    argument: 'options.historySize',
  });
  assert.throws(() => options.normalize({ command: 'a', args: 'x' }), { argument: 'options.args' });
});

test('options: a timeout given as undefined keeps its default (it does not turn the timeout off)', () => {
  const o = options.normalize({
    command: 'a',
    requestTimeoutMs: undefined,
    initializeTimeoutMs: undefined,
    promptTimeoutMs: undefined,
  });
  assert.equal(o.requestTimeoutMs, 60_000);
  assert.equal(o.initializeTimeoutMs, 30_000);
  assert.equal(o.promptTimeoutMs, 0);
});
