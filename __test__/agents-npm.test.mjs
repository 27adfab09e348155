// npx distributions without the network: a fixture npm registry on
// 127.0.0.1 serves an ACP agent package (the mock agent) whose postinstall
// would leave a mark. The real npm installs it into the store; it must not
// run the script, and the launch must be `<node> <bin entry>`.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { AcpClient, AgentManager } from '../index.mjs';
import { MOCK_AGENT, assertNoWrapper, scratchDir, serve, tar } from './agents-fixtures.mjs';
import { argvOf } from './helpers.mjs';

const LINUX = process.platform === 'linux';
const POSIX = process.platform !== 'win32';
const NAME = '@fixture/mock-acp-agent';
const VERSION = '1.2.3';

describe('npx distributions (fixture npm registry)', () => {
  let server;
  let mark;
  before(async () => {
    mark = join(scratchDir('acp-npm-mark-'), 'postinstall-ran');
    const manifest = {
      name: NAME,
      version: VERSION,
      type: 'module',
      bin: { 'mock-acp-agent': 'dist/agent.mjs' },
      scripts: { postinstall: `node -e "require('fs').writeFileSync(${JSON.stringify(mark)}, 'ran')"` },
    };
    const tgz = gzipSync(
      tar([
        { name: 'package/package.json', data: JSON.stringify(manifest) },
        { name: 'package/dist/agent.mjs', data: readFileSync(MOCK_AGENT), mode: 0o755 },
      ]),
    );
    const integrity = `sha512-${createHash('sha512').update(tgz).digest('base64')}`;
    const shasum = createHash('sha1').update(tgz).digest('hex');
    const routes = { '/tarballs/mock-acp-agent-1.2.3.tgz': { body: tgz } };
    server = await serve(routes);
    const packument = JSON.stringify({
      name: NAME,
      'dist-tags': { latest: VERSION },
      versions: {
        [VERSION]: {
          ...manifest,
          dist: { tarball: server.url('/tarballs/mock-acp-agent-1.2.3.tgz'), integrity, shasum },
        },
      },
    });
    routes['/@fixture%2fmock-acp-agent'] = { body: packument, headers: { 'content-type': 'application/json' } };
    routes['/@fixture%2Fmock-acp-agent'] = routes['/@fixture%2fmock-acp-agent'];
  });
  after(() => server?.close());

  it('installs the exact version without install scripts and launches <node> <entry>, no wrapper', async () => {
    const storeDir = scratchDir('acp-npm-store-');
    const m = new AgentManager({
      storeDir,
      index: {
        version: '1',
        agents: [
          {
            id: 'mock-npm',
            name: 'Mock',
            version: VERSION,
            distribution: { npx: { package: `${NAME}@${VERSION}`, args: ['--string-ids'] } },
          },
        ],
      },
      installEnv: {
        npm_config_registry: `${server.base}/`,
        npm_config_cache: scratchDir('acp-npm-cache-'),
      },
    });
    const r = await m.install('mock-npm');
    assert.equal(r.kind, 'npx');
    assert.equal(existsSync(mark), false, 'the postinstall script did not run');
    const record = JSON.parse(readFileSync(join(r.dir, 'install.json'), 'utf8'));
    assert.equal(record.entry, 'node_modules/@fixture/mock-acp-agent/dist/agent.mjs');
    const launch = await m.launch('mock-npm');
    assert.deepEqual(launch, {
      command: process.execPath,
      args: [join(r.dir, 'node_modules', '@fixture', 'mock-acp-agent', 'dist', 'agent.mjs'), '--string-ids'],
      env: {},
    });
    const client = await AcpClient.connect(launch);
    assert.equal(client.agent.agentInfo.name, 'mock-agent');
    if (LINUX) {
      const pid = client.pid;
      assertNoWrapper(assert, pid);
      const argv = argvOf(pid);
      assert.equal(argv[1], launch.args[0], 'node runs the entry itself');
    }
    await client.close();
    assert.equal((await m.probe('mock-npm')).status, 'ready');
  });

  it('finds npm-cli.js next to Node or behind npm on PATH, run by the chosen Node (never a shim)', () => {
    const { defaultNpm } = createRequire(import.meta.url)('../lib/agents/install.js');
    const prefix = scratchDir('acp-npm-layout-');
    const cli = join(prefix, 'lib', 'node_modules', 'npm', 'bin', 'npm-cli.js');
    mkdirSync(dirname(cli), { recursive: true });
    writeFileSync(cli, '');
    mkdirSync(join(prefix, 'bin'));
    if (POSIX) symlinkSync(cli, join(prefix, 'bin', 'npm'));
    const winDir = scratchDir('acp-npm-win-');
    const winCli = join(winDir, 'node_modules', 'npm', 'bin', 'npm-cli.js');
    mkdirSync(dirname(winCli), { recursive: true });
    writeFileSync(winCli, '');
    writeFileSync(join(winDir, 'npm.cmd'), '');
    const electronLike = '/opt/app/electron';
    assert.deepEqual(defaultNpm(join(prefix, 'bin', 'node'), { pathEnv: '', electron: false }), {
      command: [join(prefix, 'bin', 'node'), cli],
      env: {},
    });
    // POSIX: `npm` on PATH is a symlink to npm-cli.js. Windows: `npm.cmd`, below.
    if (POSIX) {
      assert.deepEqual(defaultNpm(electronLike, { pathEnv: join(prefix, 'bin'), electron: false }), {
        command: [electronLike, cli],
        env: {},
      });
    }
    assert.deepEqual(defaultNpm(electronLike, { pathEnv: winDir, electron: false }), {
      command: [electronLike, winCli],
      env: {},
    });
    assert.deepEqual(defaultNpm(process.execPath, { pathEnv: winDir, electron: true }).env, {
      ELECTRON_RUN_AS_NODE: '1',
    });
  });

  it('an npm failure is a clear ERR_ACP_AGENT_INSTALL with npm output, and leaves nothing', async () => {
    const storeDir = scratchDir('acp-npm-store-');
    const m = new AgentManager({
      storeDir,
      index: {
        version: '1',
        agents: [
          { id: 'missing-npm', name: 'Missing', version: '9.9.9', distribution: { npx: { package: `${NAME}@9.9.9` } } },
        ],
      },
      installEnv: {
        npm_config_registry: `${server.base}/`,
        npm_config_cache: scratchDir('acp-npm-cache-'),
        npm_config_fetch_retries: '0',
      },
    });
    await assert.rejects(
      m.install('missing-npm'),
      (err) =>
        err.code === 'ERR_ACP_AGENT_INSTALL' && /npm install @fixture\/mock-acp-agent@9\.9\.9 failed/.test(err.message),
    );
    assert.equal(existsSync(join(storeDir, 'agents', 'missing-npm')), false);
  });
});
