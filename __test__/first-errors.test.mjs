// What a user sees first when the command is not an ACP agent (or not in its
// ACP mode): initialize fails as soon as the agent exits or closes stdout,
// and the error quotes what it printed instead of JSON-RPC.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AcpClient } from '../index.mjs';

// A generous timeout: these must fail because of what the agent did, long before.
const NEVER = 10 * 60_000;

async function initializeError(script, options = {}) {
  const client = new AcpClient({
    command: process.execPath,
    args: ['-e', script],
    initializeTimeoutMs: NEVER,
    ...options,
  });
  try {
    await client.initialize();
  } catch (err) {
    return err;
  } finally {
    client.kill();
  }
  assert.fail('initialize succeeded');
}

test('an agent that prints usage and exits: ERR_ACP_CLOSED at once, quoting its stdout', async () => {
  const err = await initializeError(
    "console.log('Usage: agent [--acp]'); console.log('unknown option: --stdio'); process.exit(2)",
  );
  assert.equal(err.code, 'ERR_ACP_CLOSED');
  assert.equal(err.exitCode, 2);
  assert.deepEqual(err.stdoutHead, ['Usage: agent [--acp]', 'unknown option: --stdio']);
  assert.match(
    err.message,
    /exited with code 2 before answering initialize\nThe agent printed on stdout \(not JSON-RPC: is it started in its ACP mode\?\):\n {2}Usage: agent \[--acp\]\n {2}unknown option: --stdio$/,
  );
});

// Closing fd 1 from Node is a POSIX move; Windows pipes behave differently.
test('an agent that closes stdout but keeps running: ERR_ACP_CLOSED at once, quoting its stdout', {
  skip: process.platform === 'win32' && 'closes fd 1 the POSIX way',
}, async () => {
  const err = await initializeError(
    "process.stdout.write('interactive mode\\n', () => { require('fs').closeSync(1); setInterval(() => {}, 1000); })",
  );
  assert.equal(err.code, 'ERR_ACP_CLOSED');
  assert.equal(err.reason, 'stdout-closed');
  assert.deepEqual(err.stdoutHead, ['interactive mode']);
});

// The stop for a closed stdout signals it; an agent that catches SIGTERM
// and exits 0 has no signal in its status, yet was stopped, not ended by itself.
test('an agent that closes stdout, then exits 0 on our SIGTERM: reported as stopped (stdout-closed), not exited', {
  skip: process.platform === 'win32' && 'closes fd 1 and catches SIGTERM the POSIX way',
}, async () => {
  const err = await initializeError(
    "process.on('SIGTERM', () => process.exit(0)); process.stdout.write('interactive mode\\n', () => { require('fs').closeSync(1); setInterval(() => {}, 1000); })",
  );
  assert.equal(err.code, 'ERR_ACP_CLOSED');
  assert.equal(err.exitCode, 0, 'it exited 0 itself, on the SIGTERM');
  assert.equal(err.reason, 'stdout-closed');
});

test('an agent that only chats on stdout: the error keeps a bounded head of what it printed', async () => {
  const script =
    "console.log('x'.repeat(300)); for (let i = 0; i < 20; i++) console.log('> line ' + i); setInterval(() => {}, 1000)";
  const client = new AcpClient({ command: process.execPath, args: ['-e', script], initializeTimeoutMs: NEVER });
  let seen = 0;
  const allPrinted = new Promise((resolve) => client.on('protocolNoise', () => ++seen === 21 && resolve()));
  const init = client.initialize();
  await allPrinted;
  client.kill(); // the host gives up (a Cancel button): the call settles with what was seen
  const err = await init.then(
    () => assert.fail('initialize succeeded'),
    (e) => e,
  );
  assert.equal(err.code, 'ERR_ACP_CLOSED');
  assert.equal(err.stdoutHead.length, 5, 'at most 5 lines');
  assert.equal(err.stdoutHead[0], 'x'.repeat(200), 'each cut to 200 characters');
  assert.deepEqual(err.stdoutHead.slice(1), ['> line 0', '> line 1', '> line 2', '> line 3']);
});

test('a timeout quotes the stdout head too', async () => {
  const client = new AcpClient({
    command: process.execPath,
    args: ['-e', "console.log('Welcome! Type help.'); setInterval(() => {}, 1000)"],
  });
  // Start the clock only once the line arrived: the assertion does not race
  // the agent's start-up. (An idle client does not keep Node alive: a timer does.)
  const keepAlive = setInterval(() => {}, 1000);
  await new Promise((resolve) => client.once('protocolNoise', resolve));
  clearInterval(keepAlive);
  const err = await client.initialize({}, { timeoutMs: 200 }).then(
    () => assert.fail('initialize succeeded'),
    (e) => e,
  );
  client.kill();
  assert.equal(err.code, 'ERR_ACP_TIMEOUT');
  assert.deepEqual(err.stdoutHead, ['Welcome! Type help.']);
  assert.match(err.message, /no answer within 200 ms\nThe agent printed on stdout[^\n]*\n {2}Welcome! Type help\.$/);
});
