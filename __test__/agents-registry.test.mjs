// The agent index: checked by hand against the registry schema (and
// stricter where a value becomes a path or a command-line argument),
// fetched with If-None-Match, cached, and replaced by the cached copy or the
// bundled snapshot when the network fails.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { AgentManager } from '../index.mjs';
import { scratchDir, serve } from './agents-fixtures.mjs';

const require = createRequire(import.meta.url);
const { checkIndex } = require('../lib/agents/schema.js');
const tmp = () => scratchDir('acp-registry-');

const npxAgent = (id, pkg = '@scope/agent@1.2.3', extra = {}) => ({
  id,
  name: id,
  version: '1.2.3',
  distribution: { npx: { package: pkg } },
  ...extra,
});

describe('index schema', () => {
  it('drops an id with a trailing newline ("evil\\n"), which Python jsonschema lets through', () => {
    const { agents, problems } = checkIndex({ version: '1', agents: [npxAgent('evil\n'), npxAgent('good')] });
    assert.deepEqual(
      agents.map((a) => a.id),
      ['good'],
    );
    assert.match(problems[0], /agents\[0\]\.id must match/);
  });

  it('refuses other bad ids, versions that would name another directory, and package specs that are npm flags or ranges', () => {
    const bad = [
      npxAgent('Upper'),
      npxAgent('9lives'),
      npxAgent('a/b'),
      { ...npxAgent('dots'), version: '../../x' },
      { ...npxAgent('slash'), version: '1.0/2' },
      npxAgent('flag', '--registry=http://evil'),
      npxAgent('range', 'pkg@^1.0.0'),
      npxAgent('tag', 'pkg@latest'),
      { id: 'pip-flag', name: 'x', version: '1', distribution: { uvx: { package: '--index-url=http://evil' } } },
      { id: 'no-dist', name: 'x', version: '1', distribution: {} },
      {
        id: 'bad-cmd',
        name: 'x',
        version: '1',
        distribution: { binary: { 'linux-x86_64': { archive: 'https://x/a.zip', cmd: '../../bin/sh' } } },
      },
      {
        id: 'abs-cmd',
        name: 'x',
        version: '1',
        distribution: { binary: { 'linux-x86_64': { archive: 'https://x/a.zip', cmd: '/bin/sh' } } },
      },
      {
        id: 'file-url',
        name: 'x',
        version: '1',
        distribution: { binary: { 'linux-x86_64': { archive: 'file:///etc/passwd', cmd: 'a' } } },
      },
      {
        id: 'short-sum',
        name: 'x',
        version: '1',
        distribution: { binary: { 'linux-x86_64': { archive: 'https://x/a.zip', cmd: 'a', sha256: 'abc' } } },
      },
      { ...npxAgent('bad-env'), distribution: { npx: { package: 'pkg', env: { 'A=B': 'x' } } } },
    ];
    const { agents, problems } = checkIndex({ agents: bad });
    assert.deepEqual(agents, []);
    assert.equal(problems.length, bad.length);
  });

  it('accepts schema drift: upper-case sha256, unknown targets and fields, no extensions; an unpinned package gets the agent version', () => {
    const sum = 'AB'.repeat(32);
    const { agents, problems } = checkIndex({
      version: '1.0.0',
      agents: [
        {
          id: 'drift',
          name: 'Drift',
          version: '2.0.0',
          website: 'https://example.com',
          preview: { anything: true },
          distribution: {
            binary: {
              'linux-x86_64': { archive: 'https://x/a.tar.gz', cmd: './a', sha256: sum },
              'freebsd-riscv64': { archive: 'https://x/b', cmd: 'b' },
            },
            npx: { package: 'drift-agent', cmd: 'drift' },
            uvx: { package: 'drift-agent@2.0.0' },
          },
        },
      ],
    });
    assert.deepEqual(problems, []);
    assert.equal(agents[0].distribution.binary['linux-x86_64'].sha256, sum.toLowerCase());
    assert.deepEqual(Object.keys(agents[0].distribution.binary), ['linux-x86_64']);
    assert.equal(agents[0].distribution.npx.version, '2.0.0');
    assert.equal(agents[0].distribution.uvx.version, '2.0.0');
  });

  it('refuses an index with one id twice, and a malformed top level', () => {
    assert.throws(() => checkIndex({ agents: [npxAgent('twice'), npxAgent('twice')] }), {
      code: 'ERR_ACP_AGENT_INDEX',
      message: /appears twice/,
    });
    assert.throws(() => checkIndex({ agents: {} }), { code: 'ERR_ACP_AGENT_INDEX' });
    // A key twice in the JSON text is JSON.parse's business: the last one wins.
    assert.equal(
      checkIndex(
        JSON.parse('{"agents":[{"id":"x","id":"y","name":"n","version":"1","distribution":{"npx":{"package":"p"}}}]}'),
      ).agents[0].id,
      'y',
    );
  });
});

describe('loading the index', () => {
  let server;
  const etag = '"v1"';
  const index = { version: '1', agents: [npxAgent('net-agent')] };
  before(async () => {
    server = await serve({
      '/registry.json': (req, res) => {
        if (req.headers['if-none-match'] === etag) return res.writeHead(304, { etag }).end();
        const body = JSON.stringify(index);
        res
          .writeHead(200, { etag, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) })
          .end(body);
      },
      '/gzip.json': { body: gzipSync(JSON.stringify(index)), headers: { 'content-encoding': 'gzip' } },
      '/bad.json': { body: JSON.stringify({ agents: [npxAgent('x'), npxAgent('x')] }) },
      '/not-json.json': { body: '<html>' },
    });
  });
  after(() => server.close());

  it('fetches, caches with the ETag, then revalidates with If-None-Match (304: the cached copy)', async () => {
    const storeDir = tmp();
    const first = await new AgentManager({ storeDir, index: server.url('/registry.json') }).index();
    assert.equal(first.source, 'network');
    assert.deepEqual(
      first.agents.map((a) => a.id),
      ['net-agent'],
    );
    assert.equal(JSON.parse(readFileSync(join(storeDir, 'index', 'meta.json'), 'utf8')).etag, '"v1"');
    const second = await new AgentManager({ storeDir, index: server.url('/registry.json') }).index();
    assert.equal(server.requests.at(-1).headers['if-none-match'], '"v1"');
    assert.equal(second.source, 'cache');
    assert.equal(second.stale, false);
    assert.deepEqual(
      second.agents.map((a) => a.id),
      ['net-agent'],
    );
  });

  it('offline or failing: the cached copy, else the bundled snapshot', async () => {
    const storeDir = tmp();
    await new AgentManager({ storeDir, index: server.url('/registry.json') }).index();
    const cached = await new AgentManager({ storeDir, index: server.url('/registry.json'), offline: true }).index();
    assert.deepEqual(
      { source: cached.source, stale: cached.stale, ids: cached.agents.map((a) => a.id) },
      { source: 'cache', stale: true, ids: ['net-agent'] },
    );
    const down = await new AgentManager({ storeDir: tmp(), index: 'http://127.0.0.1:9/registry.json' }).index();
    assert.equal(down.source, 'bundled');
    assert.equal(down.error.code, 'ERR_ACP_AGENT_DOWNLOAD');
    assert.ok(down.agents.some((a) => a.id === 'claude-acp'));
    assert.ok(down.agents.some((a) => a.distribution.uvx?.package === 'agentao'));
  });

  it('a gzip-encoded, invalid or non-JSON index never replaces the good cached copy', async () => {
    for (const bad of ['/gzip.json', '/bad.json', '/not-json.json']) {
      const storeDir = tmp();
      // The same URL answers well once, then badly.
      server.routes['/flip.json'] = { body: JSON.stringify(index) };
      assert.equal((await new AgentManager({ storeDir, index: server.url('/flip.json') }).index()).source, 'network');
      const cachedText = readFileSync(join(storeDir, 'index', 'registry.json'), 'utf8');
      server.routes['/flip.json'] = server.routes[bad];
      const got = await new AgentManager({ storeDir, index: server.url('/flip.json') }).index();
      assert.deepEqual(
        { source: got.source, stale: got.stale, ids: got.agents.map((a) => a.id) },
        { source: 'cache', stale: true, ids: ['net-agent'] },
        bad,
      );
      assert.match(got.error.code, /ERR_ACP_AGENT_(DOWNLOAD|INDEX)/);
      assert.equal(
        readFileSync(join(storeDir, 'index', 'registry.json'), 'utf8'),
        cachedText,
        `${bad} left the cache as it was`,
      );
    }
    const gz = await new AgentManager({ storeDir: tmp(), index: server.url('/gzip.json') }).index();
    assert.equal(gz.source, 'bundled');
    assert.match(gz.error.message, /Content-Encoding: gzip/);
  });

  it('host presets: a command by id, listed with the index, winning over an index entry of the same id', async () => {
    const m = new AgentManager({
      storeDir: tmp(),
      index,
      presets: {
        'net-agent': { command: '/opt/agent', args: ['--acp'], name: 'Mine' },
        local: { command: 'my-agent' },
      },
    });
    const list = await m.list();
    assert.deepEqual(
      list.map((a) => [a.id, a.source, a.name]),
      [
        ['net-agent', 'preset', 'Mine'],
        ['local', 'preset', 'local'],
      ],
    );
    assert.deepEqual(await m.launch('net-agent'), { command: '/opt/agent', args: ['--acp'], env: {} });
    assert.throws(() => new AgentManager({ storeDir: tmp(), presets: { 'Bad Id': { command: 'x' } } }), {
      code: 'ERR_ACP_INVALID_ARGUMENT',
    });
    assert.throws(() => new AgentManager({ storeDir: 'relative/dir' }), { code: 'ERR_ACP_INVALID_ARGUMENT' });
  });
});
