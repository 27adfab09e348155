// AgentManager against the real registries: a small published npm agent
// (pi-acp 0.0.34, 7 MB installed), an npm agent from the ecosystem
// (@zed-industries/claude-agent-acp 0.23.1, npx distribution) and a Python
// agent from PyPI (agentao 0.5.17, uvx distribution), installed
// into a store kept in the cache directory (a rerun finds them installed),
// launched without wrappers and probed.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, realpathSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { AcpClient, AgentManager } from '../index.mjs';
import { assertNoWrapper } from '../__test__/agents-fixtures.mjs';
import { scratchDir } from './helpers.mjs';

const INDEX = {
  version: '1',
  agents: [
    { id: 'pi-acp', name: 'pi', version: '0.0.34', distribution: { npx: { package: 'pi-acp@0.0.34' } } },
    {
      id: 'claude-acp',
      name: 'Claude Agent',
      version: '0.23.1',
      distribution: { npx: { package: '@zed-industries/claude-agent-acp@0.23.1' } },
    },
    {
      id: 'agentao',
      name: 'Agentao',
      version: '0.5.17',
      distribution: { uvx: { package: 'agentao==0.5.17', args: ['--acp', '--stdio'] } },
    },
  ],
};
const KEY = INDEX.agents.map((a) => `${a.id}-${a.version}`).join('_');

function storeDir() {
  if (process.env.ACP_AGENTS_TEST_STORE) return process.env.ACP_AGENTS_TEST_STORE;
  return join(process.env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'acp-native', `agents-store_${KEY}`);
}

/** Registries hiccup: retry an install (the store keeps nothing of a failed one). */
async function installWithRetries(m, id, tries = 3) {
  for (let i = 1; ; i++) {
    try {
      return await m.install(id);
    } catch (err) {
      if (i >= tries || err.code !== 'ERR_ACP_AGENT_INSTALL') throw err;
      await new Promise((r) => setTimeout(r, 2000 * i));
    }
  }
}

const baseEnv = (t) => ({ PATH: process.env.PATH, HOME: scratchDir(t, 'agents-home'), LANG: 'C.UTF-8' });

describe('real agents from npm and PyPI', () => {
  const m = new AgentManager({ storeDir: storeDir(), index: INDEX });

  it('npx: pi-acp 0.0.34 initializes, and its probe fails with the reason (the pi it drives is not installed)', async (t) => {
    const r = await installWithRetries(m, 'pi-acp');
    const launch = await m.launch('pi-acp');
    assert.deepEqual(launch.args, [join(r.dir, 'node_modules', 'pi-acp', 'dist', 'index.js')]);
    // An empty PATH: whatever a developer has installed, `pi` is not found.
    const probe = await m.probe('pi-acp', {
      refresh: true,
      env: { ...baseEnv(t), PATH: scratchDir(t, 'agents-path') },
      replaceEnv: true,
    });
    assert.equal(probe.status, 'failed', JSON.stringify(probe));
    assert.equal(probe.agentInfo.version, '0.0.34');
    assert.equal(probe.authMethods[0].id, 'pi_terminal_login');
    assert.match(probe.error.message, /Could not start pi/);
  });

  it('npx: claude-agent-acp 0.23.1 installed at that version, launched as <node> dist/index.js, probed ready', async (t) => {
    const r = await installWithRetries(m, 'claude-acp');
    const record = JSON.parse(readFileSync(join(r.dir, 'install.json'), 'utf8'));
    assert.equal(record.entry, 'node_modules/@zed-industries/claude-agent-acp/dist/index.js');
    const pkg = JSON.parse(
      readFileSync(join(r.dir, 'node_modules', '@zed-industries', 'claude-agent-acp', 'package.json'), 'utf8'),
    );
    assert.equal(pkg.version, '0.23.1');
    const launch = await m.launch('claude-acp');
    assert.equal(launch.command, process.execPath);
    // Claude adapters refuse root when IS_SANDBOX is set to anything: empty.
    const env = { ...baseEnv(t), CLAUDE_CONFIG_DIR: scratchDir(t, 'claude-config'), IS_SANDBOX: '' };
    const client = await AcpClient.connect({ ...launch, env, replaceEnv: true });
    assert.equal(client.agent.agentInfo.version, '0.23.1');
    if (process.platform === 'linux') assertNoWrapper(assert, client.pid);
    await client.close();
    const probe = await m.probe('claude-acp', { refresh: true, env, replaceEnv: true });
    assert.equal(probe.status, 'ready', JSON.stringify(probe));
    assert.equal(probe.agentCapabilities.loadSession, true);
  });

  it('uvx: agentao 0.5.17 in its own venv; needs-auth without a model key, ready with one', async (t) => {
    const r = await installWithRetries(m, 'agentao');
    const record = JSON.parse(readFileSync(join(r.dir, 'install.json'), 'utf8'));
    assert.equal(record.kind, 'uvx');
    assert.ok(existsSync(join(r.dir, record.python)));
    const launch = await m.launch('agentao');
    assert.equal(
      realpathSync(launch.command).startsWith(realpathSync(r.dir)) || launch.command.startsWith(r.dir),
      true,
      'the venv python',
    );
    const noKey = await m.probe('agentao', { refresh: true, env: baseEnv(t), replaceEnv: true });
    assert.equal(noKey.status, 'needs-auth', JSON.stringify(noKey));
    assert.equal(noKey.agentInfo.version, '0.5.17');
    const withKey = {
      ...baseEnv(t),
      OPENAI_API_KEY: 'fake-key',
      OPENAI_BASE_URL: 'http://127.0.0.1:9/v1',
      OPENAI_MODEL: 'fake-model',
    };
    const ready = await m.probe('agentao', { refresh: true, env: withKey, replaceEnv: true });
    assert.equal(ready.status, 'ready', JSON.stringify(ready));
  });
});
