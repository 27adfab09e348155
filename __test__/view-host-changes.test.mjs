// A session view folds the changes the host itself makes and the agent
// does not echo (no agent sends `current_mode_update` for a mode the client
// set; `session/set_config_option` answers with the new option list): at
// the point of the response in the wire order, as a change a UI copy sees.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { MOCK_AGENT } from './helpers.mjs';

const require = createRequire(import.meta.url);
const { AcpClient } = require('../index.js');
const { applyChanges } = require('../lib/session-fold.js');

async function viewed(t) {
  const client = await AcpClient.connect({ command: process.execPath, args: [MOCK_AGENT] });
  t.after(() => client.kill());
  const { sessionId, ...setup } = await client.newSession();
  const view = client.session(sessionId, { setup, intervalMs: 0 });
  // A UI's copy, kept by the change events only.
  const copy = view.snapshot();
  view.on('change', (c) => applyChanges(copy, c));
  return { client, sessionId, view, copy };
}

test('view: setSessionMode() that succeeds sets modes.currentModeId, in the view and a UI copy', async (t) => {
  const { client, sessionId, view, copy } = await viewed(t);
  assert.equal(view.snapshot().modes.currentModeId, 'default');
  await client.setSessionMode({ sessionId, modeId: 'plan' });
  assert.equal(view.snapshot().modes.currentModeId, 'plan');
  assert.equal(view.snapshot().modes.availableModes.length, 2, 'the other fields stay');
  view.flush();
  assert.deepEqual(copy, view.snapshot());
  // A refused change changes nothing.
  await assert.rejects(client.setSessionMode({ sessionId, modeId: 'no-such-mode' }), { rpcCode: -32602 });
  assert.equal(view.snapshot().modes.currentModeId, 'plan');
});

test('view: setSessionConfigOption() takes the option list of the response', async (t) => {
  const { client, sessionId, view, copy } = await viewed(t);
  const result = await client.setSessionConfigOption({ sessionId, configId: 'model', value: 'smart' });
  assert.deepEqual(view.snapshot().config.configOptions, result.configOptions);
  assert.equal(view.snapshot().config.configOptions[0].currentValue, 'smart');
  view.flush();
  assert.deepEqual(copy, view.snapshot());
});

test("view: the host's changes and the agent's updates fold in wire order", async (t) => {
  const { client, sessionId, view, copy } = await viewed(t);
  await client.setSessionMode({ sessionId, modeId: 'default' });
  // The turn sends current_mode_update 'plan' and config model 'fast' after it.
  await client.setSessionConfigOption({ sessionId, configId: 'model', value: 'smart' });
  await client.prompt({ sessionId, prompt: 'all' });
  assert.equal(view.snapshot().modes.currentModeId, 'plan');
  assert.equal(view.snapshot().config.configOptions[0].currentValue, 'fast');
  // And the host's change after the agent's wins.
  await client.setSessionMode({ sessionId, modeId: 'default' });
  assert.equal(view.snapshot().modes.currentModeId, 'default');
  view.flush();
  assert.deepEqual(copy, view.snapshot());
});
