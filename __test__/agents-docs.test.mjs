// docs/agents-manager.md: its "pick an agent" snippet runs, against a
// fixture index served from 127.0.0.1 and a stand-in for the two VS Code
// calls it makes (the quick pick answers like a user would).
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { AGENT, agentProgram, binaryAgent, MOCK_AGENT, scratchDir, serve, tarGz } from './agents-fixtures.mjs';

const require = createRequire(import.meta.url);
const { currentTarget } = require('../lib/agents/schema.js');

function snippets() {
  const doc = readFileSync(new URL('../docs/agents-manager.md', import.meta.url), 'utf8');
  return [...doc.matchAll(/^```js(?: no-check)?\n([\s\S]*?)^```$/gm)].map((m) => m[1]);
}

/** The part of the VS Code API the snippet uses; `pick` chooses like the user. */
function vscodeStandIn(pick, cwd) {
  const seen = { items: null, reports: [], errors: [] };
  const vscode = {
    ProgressLocation: { Notification: 15 },
    window: {
      showQuickPick: async (items) => {
        seen.items = items;
        return items.find(pick);
      },
      withProgress: async (_options, task) => task({ report: (r) => seen.reports.push(r) }),
      showErrorMessage: (m) => seen.errors.push(m),
    },
    workspace: { workspaceFolders: [{ uri: { fsPath: cwd } }] },
  };
  return { vscode, seen };
}

describe('docs/agents-manager.md', () => {
  let server;
  let pickAgent;
  let options;
  before(async () => {
    server = await serve({
      '/agent.tar.gz': { body: tarGz([{ name: `bin/${AGENT}`, data: agentProgram(), mode: 0o755 }]) },
    });
    const [code] = snippets();
    const file = join(scratchDir('acp-agents-doc-'), 'pick-agent.mjs');
    writeFileSync(
      file,
      code.replaceAll("from 'acp-native'", `from '${new URL('../index.mjs', import.meta.url).href}'`),
    );
    ({ pickAgent } = await import(pathToFileURL(file).href));
    options = {
      index: {
        version: '1',
        agents: [
          binaryAgent('fixture', '1.0.0', currentTarget(), server.url('/agent.tar.gz'), { cmd: `./bin/${AGENT}` }),
        ],
      },
      presets: {
        'login-first': { command: process.execPath, args: [MOCK_AGENT, '--require-auth'], name: 'Login first' },
      },
    };
  });
  after(() => server?.close());

  it('pick an agent: listed, installed with progress, probed, connected', async () => {
    const cwd = scratchDir('acp-agents-doc-ws-');
    const { vscode, seen } = vscodeStandIn((i) => i.id === 'fixture', cwd);
    const context = { globalStorageUri: { fsPath: scratchDir('acp-agents-doc-store-') } };
    const client = await pickAgent(vscode, context, options);
    assert.deepEqual(
      seen.items.map((i) => i.id),
      ['fixture', 'login-first'],
    );
    assert.equal(Math.round(seen.reports.reduce((n, r) => n + r.increment, 0)), 100);
    const { sessionId } = await client.newSession({ cwd });
    assert.match(sessionId, /^sess_/);
    await client.close();
    // Installed now: listed so.
    const again = vscodeStandIn(() => false, cwd);
    assert.equal(await pickAgent(again.vscode, context, options), undefined);
    assert.equal(again.seen.items[0].description, '1.0.0 (installed)');
  });

  it('pick an agent that needs a login: authenticated with its first method', async () => {
    const cwd = scratchDir('acp-agents-doc-ws-');
    const { vscode } = vscodeStandIn((i) => i.id === 'login-first', cwd);
    const client = await pickAgent(
      vscode,
      { globalStorageUri: { fsPath: scratchDir('acp-agents-doc-store-') } },
      options,
    );
    const { sessionId } = await client.newSession({ cwd });
    assert.match(sessionId, /^sess_/);
    await client.close();
  });
});
