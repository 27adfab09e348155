// Results of the client's own ACP requests over `maxResultBytes` resolve
// cut by the core (what a host needs whole, the rest `$omitted` markers),
// their full text on demand for as long as the result is kept.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { setTimeout as sleep } from 'node:timers/promises';
import { createRequire } from 'node:module';
import { AcpClient, resultCut, rawResult } from '../index.mjs';
import { HOSTILE_AGENT as HOSTILE, mockSession } from './helpers.mjs';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc');
const { native } = createRequire(import.meta.url)('../lib/loader.js');

// fixtures/hostile-agent.mjs answers `session/load` with `_meta.pad`, an
// array of `_meta.zeros` + 1 zeros: 3M is a 6 MB line, 72 MB as `jsonSize`.
const ZEROS = 3_000_000;

async function hostileSession(options = {}) {
  const client = new AcpClient({ command: process.execPath, args: [HOSTILE], ...options });
  await client.initialize();
  const { sessionId } = await client.newSession({ cwd: process.cwd() });
  return { client, sessionId };
}

test('a 6 MB session/load result resolves cut, the session state whole, the full text on demand', async () => {
  const { client, sessionId } = await hostileSession();
  const result = await client.loadSession({ sessionId, _meta: { zeros: ZEROS } });
  // What the host goes on with is whole; the payload is a marker.
  assert.deepEqual(result.modes, { currentModeId: 'ask', availableModes: [{ id: 'ask', name: 'Ask' }] });
  assert.deepEqual(result._meta.pad, { $omitted: 'size', bytes: (ZEROS + 1) * 24 });
  assert.equal(resultCut(result), true);
  // The full text, on demand, as the agent sent it.
  const raw = rawResult(result);
  assert.ok(raw.length > ZEROS * 2, `full result: ${raw.length} chars`);
  assert.ok(raw.startsWith('{"modes":{"currentModeId":"ask"') && raw.includes('"pad":[0,0,0,'));
  // Small results are whole, and say so.
  const created = await client.newSession({ cwd: process.cwd() });
  assert.equal(resultCut(created), false);
  assert.equal(rawResult(created), undefined);
  await client.close();
  // Kept with the result, not with the client.
  assert.equal(rawResult(result).length, raw.length);
});

test('maxResultBytes: ACP results over it are cut whoever calls; extension results never; Infinity keeps all whole', async () => {
  const pad = 'x'.repeat(10_000);
  // The mock agent answers set_mode with `_meta: { method, params }`: the params echoed.
  const params = (sessionId) => ({ sessionId, modeId: 'plan', _meta: { pad } });
  let { client, sessionId } = await mockSession({ maxResultBytes: 4096 });
  const viaMethod = await client.setSessionMode(params(sessionId));
  const viaRequest = await client.request('session/set_mode', params(sessionId));
  for (const result of [viaMethod, viaRequest]) {
    assert.equal(resultCut(result), true);
    assert.equal(result._meta.method, 'session/set_mode');
    assert.deepEqual(result._meta.params._meta.pad, { $omitted: 'size', bytes: pad.length });
    assert.equal(JSON.parse(rawResult(result))._meta.params._meta.pad, pad);
  }
  // An extension method's result is the caller's: whole.
  const ext = await client.request('_mock/echo', { pad });
  assert.equal(resultCut(ext), false);
  assert.equal(ext.pad, pad);
  await client.close();

  ({ client, sessionId } = await mockSession({ maxResultBytes: Number.POSITIVE_INFINITY }));
  const whole = await client.setSessionMode(params(sessionId));
  assert.equal(resultCut(whole), false);
  assert.equal(whole._meta.params._meta.pad, pad);
  await client.close();
});

test('the full text goes with the result: dropped and collected, nothing of it is held', async () => {
  const { client, sessionId } = await hostileSession();
  let result = await client.loadSession({ sessionId, _meta: { zeros: ZEROS } });
  // Other tests' results may be held too, or go at any collection: what is
  // held can only fall, and holds this result's text until it goes.
  const held = native.heldFullResultBytes();
  const length = rawResult(result).length;
  assert.ok(length > ZEROS * 2);
  assert.ok(held >= length, `${held} bytes held while the result is`);
  result = null;
  // Full GCs with turns between, until the handle's finalizer ran.
  for (let i = 0; i < 200 && native.heldFullResultBytes() > held - length; i++) {
    gc();
    await sleep(20);
  }
  assert.ok(native.heldFullResultBytes() <= held - length, `${native.heldFullResultBytes()} bytes still held`);
  await client.close();
});
