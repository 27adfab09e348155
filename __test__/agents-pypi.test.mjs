// uvx distributions without the network: a fixture PyPI "simple" index on
// 127.0.0.1. A wheel whose console script execs the mock agent installs
// into its own venv and runs; a package published only as a source
// distribution is refused (building it would run its code at install).
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { AcpClient, AgentManager } from '../index.mjs';
import { MOCK_AGENT, deflatedZip, scratchDir, serve, tar } from './agents-fixtures.mjs';
import { EMULATOR } from './helpers.mjs';

/** A py3-none-any wheel of `fixture-agent` 1.0.0: its console script replaces python with the mock agent. */
function wheel() {
  const node = JSON.stringify(process.execPath);
  const agent = JSON.stringify(MOCK_AGENT);
  // Windows has no exec: the script waits for the agent and passes on its status.
  const init = [
    'import os, subprocess, sys',
    'def main():',
    "    if os.name == 'nt':",
    `        sys.exit(subprocess.call([${node}, ${agent}]))`,
    `    os.execv(${node}, [${node}, ${agent}])`,
    '',
  ].join('\n');
  const files = {
    'fixture_agent/__init__.py': init,
    'fixture_agent-1.0.0.dist-info/METADATA': 'Metadata-Version: 2.1\nName: fixture-agent\nVersion: 1.0.0\n',
    'fixture_agent-1.0.0.dist-info/WHEEL':
      'Wheel-Version: 1.0\nGenerator: acp-native-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n',
    'fixture_agent-1.0.0.dist-info/entry_points.txt': '[console_scripts]\nfixture-agent = fixture_agent:main\n',
  };
  const record = Object.entries(files).map(([name, text]) => {
    const digest = createHash('sha256').update(text).digest('base64url');
    return `${name},sha256=${digest},${Buffer.byteLength(text)}`;
  });
  record.push('fixture_agent-1.0.0.dist-info/RECORD,,');
  files['fixture_agent-1.0.0.dist-info/RECORD'] = `${record.join('\n')}\n`;
  return deflatedZip(Object.entries(files).map(([name, data]) => ({ name, data })));
}

/** An sdist of `sdist-agent` 1.0.0 whose setup.py would leave a mark. */
function sdist(mark) {
  const setup = `open(${JSON.stringify(mark)}, 'w').write('ran')\nfrom setuptools import setup\nsetup(name='sdist-agent', version='1.0.0')\n`;
  return gzipSync(
    tar([
      { name: 'sdist_agent-1.0.0/setup.py', data: setup },
      { name: 'sdist_agent-1.0.0/PKG-INFO', data: 'Metadata-Version: 2.1\nName: sdist-agent\nVersion: 1.0.0\n' },
    ]),
  );
}

const page = (file, body) =>
  `<!DOCTYPE html><html><body><a href="/files/${file}#sha256=${createHash('sha256').update(body).digest('hex')}">${file}</a></body></html>`;

// pip builds the venv with the platform's own Python, and Wine's prefix has none.
const NO_PYTHON =
  EMULATOR === 'wine' && 'no Windows Python in the Wine prefix; runs on Windows in the release workflow';

describe('uvx distributions (fixture PyPI index)', { skip: NO_PYTHON }, () => {
  let server;
  let mark;
  let installEnv;
  before(async () => {
    mark = join(scratchDir('acp-pypi-mark-'), 'setup-py-ran');
    const whl = wheel();
    const sd = sdist(mark);
    const html = { 'content-type': 'text/html' };
    server = await serve({
      '/simple/fixture-agent/': { body: page('fixture_agent-1.0.0-py3-none-any.whl', whl), headers: html },
      '/files/fixture_agent-1.0.0-py3-none-any.whl': { body: whl },
      '/simple/sdist-agent/': { body: page('sdist_agent-1.0.0.tar.gz', sd), headers: html },
      '/files/sdist_agent-1.0.0.tar.gz': { body: sd },
    });
    installEnv = { PIP_INDEX_URL: `${server.base}/simple/`, PIP_NO_CACHE_DIR: '1', PIP_RETRIES: '0' };
  });
  after(() => server?.close());

  const index = {
    version: '1',
    agents: [
      {
        id: 'py-agent',
        name: 'Py',
        version: '1.0.0',
        distribution: { uvx: { package: 'fixture-agent==1.0.0', args: ['--string-ids'] } },
      },
      { id: 'sdist-only', name: 'Sdist', version: '1.0.0', distribution: { uvx: { package: 'sdist-agent==1.0.0' } } },
    ],
  };

  it('installs the wheel into its own venv and launches it by its console script', async () => {
    const storeDir = scratchDir('acp-pypi-store-');
    const m = new AgentManager({ storeDir, index, installEnv });
    const r = await m.install('py-agent');
    const record = JSON.parse(readFileSync(join(r.dir, 'install.json'), 'utf8'));
    assert.deepEqual([record.kind, record.script], ['uvx', 'fixture-agent']);
    const launch = await m.launch('py-agent');
    assert.equal(launch.command, join(r.dir, ...record.python.split('/')));
    assert.deepEqual(launch.args.slice(2), ['fixture-agent', '--string-ids']);
    const client = await AcpClient.connect(launch);
    assert.equal(client.agent.agentInfo.name, 'mock-agent');
    await client.close();
  });

  it('refuses a package that only a source build could install: its setup.py never runs', async () => {
    const storeDir = scratchDir('acp-pypi-store-');
    const m = new AgentManager({ storeDir, index, installEnv });
    await assert.rejects(
      m.install('sdist-only'),
      (err) =>
        err.code === 'ERR_ACP_AGENT_INSTALL' &&
        /No matching distribution found for sdist-agent==1\.0\.0/.test(err.message),
    );
    assert.equal(existsSync(mark), false);
    assert.equal(existsSync(join(storeDir, 'agents', 'sdist-only')), false);
  });
});
