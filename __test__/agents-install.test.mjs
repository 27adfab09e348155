// AgentManager, binary distributions: a fixture registry and archives
// served from 127.0.0.1, installed into a temp store, launched and probed.
// Every hostile archive must be refused and leave nothing behind.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import {
  existsSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  realpathSync,
  statSync,
  writeFileSync,
  mkdirSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { AcpClient, AgentManager } from '../index.mjs';
import {
  AGENT,
  agentProgram,
  assertNoWrapper,
  binaryAgent,
  deflatedZip,
  serve,
  sha256,
  tar,
  tarBz2,
  tarGz,
  zip,
  scratchDir,
} from './agents-fixtures.mjs';
import { procStat } from './helpers.mjs';

const require = (await import('node:module')).createRequire(import.meta.url);
const { currentTarget } = require('../lib/agents/schema.js');
const TARGET = currentTarget();
const LINUX = process.platform === 'linux';
const WINDOWS = process.platform === 'win32';
const POSIX = !WINDOWS;

const PROGRAM = agentProgram();
const GOOD = tarGz([
  { name: 'bin/', type: '5' },
  { name: `bin/${AGENT}`, data: PROGRAM, mode: 0o755 },
  { name: 'README', data: 'hello' },
]);

let server;
const tmp = () => scratchDir('acp-agents-');
/** Where an escaping entry would land: must stay absent. */
const OUTSIDE = join(tmpdir(), `acp-agents-outside-${process.pid}`);

function manager(agents, extra = {}) {
  const storeDir = extra.storeDir ?? tmp();
  return new AgentManager({ storeDir, index: { version: '1', agents }, ...extra });
}

/**
 * The store holds no half-installed version and no staging leftovers, and
 * (Linux, where /proc shows it) this process holds no file open in it.
 */
function assertClean(m, id) {
  assert.equal(existsSync(join(m.storeDir, 'agents', id)), false, 'no version directory');
  assert.deepEqual(readdirSync(join(m.storeDir, 'tmp')), [], 'no staging leftovers');
  if (LINUX) {
    const store = realpathSync(m.storeDir);
    const open = readdirSync('/proc/self/fd')
      .map((fd) => {
        try {
          return readlinkSync(`/proc/self/fd/${fd}`);
        } catch {
          return '';
        }
      })
      .filter((file) => file.startsWith(`${store}/`));
    assert.deepEqual(open, [], 'no file of the store left open');
  }
}

before(async () => {
  const hostile = {
    '/traversal.tar.gz': tarGz([
      { name: AGENT, data: PROGRAM, mode: 0o755 },
      { name: `../../../../..${OUTSIDE}-dotdot`, data: 'pwned' },
    ]),
    '/absolute.tar.gz': tarGz([
      { name: AGENT, data: PROGRAM, mode: 0o755 },
      { name: `${OUTSIDE}-abs`, data: 'pwned' },
    ]),
    '/symlink.tar.gz': tarGz([
      { name: AGENT, data: PROGRAM, mode: 0o755 },
      { name: 'escape', type: '2', linkname: '../../../../../../../../tmp' },
    ]),
    // Each link looks inside on its own; the second one is written through the first.
    '/symlink-chain.tar.gz': tarGz([
      { name: AGENT, data: PROGRAM, mode: 0o755 },
      { name: 'a/', type: '5' },
      { name: 'a/up', type: '2', linkname: '..' },
      { name: 'a/up/a/up/x', type: '2', linkname: '..' },
    ]),
    '/write-through-link.tar.gz': tarGz([
      { name: AGENT, data: PROGRAM, mode: 0o755 },
      { name: 'here', type: '2', linkname: '.' },
      { name: 'here/../pwned', data: 'x' },
    ]),
    // `x` looks inside (root/y/.. with y a directory) but y is a link to `.`, so x is root/..
    '/link-via-dot.tar.gz': tarGz([
      { name: AGENT, data: PROGRAM, mode: 0o755 },
      { name: 'y', type: '2', linkname: '.' },
      { name: 'x', type: '2', linkname: 'y/..' },
    ]),
    '/write-via-dot.tar.gz': tarGz([
      { name: AGENT, data: PROGRAM, mode: 0o755 },
      { name: 'y', type: '2', linkname: '.' },
      { name: 'x', type: '2', linkname: 'y/..' },
      { name: 'x/pwned', data: 'x' },
    ]),
    // A second entry of the same name would replace the first (or write through a link planted there).
    '/twice.tar.gz': tarGz([
      { name: AGENT, data: PROGRAM, mode: 0o755 },
      { name: AGENT, data: 'replaced' },
    ]),
    '/hardlink.tar.gz': tarGz([
      { name: AGENT, data: PROGRAM, mode: 0o755 },
      { name: 'passwd', type: '1', linkname: '/etc/passwd' },
    ]),
    '/hardlink-dotdot.tar.gz': tarGz([
      { name: AGENT, data: PROGRAM, mode: 0o755 },
      { name: 'up', type: '1', linkname: '../outside' },
    ]),
    '/device.tar.gz': tarGz([
      { name: AGENT, data: PROGRAM, mode: 0o755 },
      { name: 'null', type: '3' },
    ]),
    '/fifo.tar.gz': tarGz([
      { name: AGENT, data: PROGRAM, mode: 0o755 },
      { name: 'pipe', type: '6' },
    ]),
    '/zip-slip.zip': zip([
      { name: AGENT, data: PROGRAM, mode: 0o100755 },
      { name: '../../../../../../../../tmp/acp-zip-slip', data: 'pwned' },
    ]),
    '/zip-symlink.zip': zip([
      { name: AGENT, data: PROGRAM, mode: 0o100755 },
      { name: 'etc', data: '/etc', mode: 0o120777 },
    ]),
    '/zip-backslash.zip': zip([
      { name: AGENT, data: PROGRAM, mode: 0o100755 },
      { name: '..\\..\\evil.txt', data: 'pwned' },
    ]),
    // 64 MiB of zeros in one file: a ~64 KiB download.
    '/bomb.tar.gz': gzipSync(
      tar([
        { name: AGENT, data: PROGRAM, mode: 0o755 },
        { name: 'zeros', data: Buffer.alloc(64 * 1024 * 1024) },
      ]),
      { level: 9 },
    ),
    '/bomb.zip': deflatedZip([
      { name: AGENT, data: PROGRAM, mode: 0o100755 },
      { name: 'zeros', data: Buffer.alloc(64 * 1024 * 1024) },
    ]),
    '/many.tar.gz': tarGz([
      { name: AGENT, data: PROGRAM, mode: 0o755 },
      ...Array.from({ length: 300 }, (_, i) => ({ name: `f${i}`, data: '' })),
    ]),
    // One entry over the default cap (20000): refused from the zip's directory, before anything is written.
    '/many.zip': zip([
      { name: AGENT, data: PROGRAM, mode: 0o100755 },
      ...Array.from({ length: 20_000 }, (_, i) => ({ name: `f${i}`, data: '' })),
    ]),
  };
  const routes = {
    '/good.tar.gz': { body: GOOD },
    '/good.tgz': { body: GOOD },
    '/good.tar.bz2': { body: tarBz2([{ name: `bin/${AGENT}`, data: PROGRAM, mode: 0o755 }]) },
    '/good.zip': {
      body: zip([
        { name: 'bin/', data: '', mode: 0o40755 },
        { name: `bin/${AGENT}`, data: PROGRAM, mode: 0o100755 },
      ]),
    },
    '/good-deflated.zip': {
      body: deflatedZip([
        { name: `bin/${AGENT}`, data: PROGRAM, mode: 0o100755 },
        { name: 'README.md', data: 'x'.repeat(10000) },
      ]),
    },
    '/agent': { body: PROGRAM },
    '/inside-links.tar.gz': {
      body: tarGz([
        { name: 'lib/', type: '5' },
        { name: 'lib/real-agent', data: PROGRAM, mode: 0o755 },
        { name: AGENT, type: '2', linkname: 'lib/real-agent' },
        { name: 'copy', type: '1', linkname: 'lib/real-agent' },
        { name: 'suid', data: 'x', mode: 0o6755 },
      ]),
    },
    ...Object.fromEntries(Object.entries(hostile).map(([k, body]) => [k, { body }])),
    '/gzip-encoded.tar.gz': { body: gzipSync(GOOD), headers: { 'content-encoding': 'gzip' } },
    '/truncated.tar.gz': (_req, res) => {
      res.writeHead(200, { 'content-length': GOOD.length });
      res.write(GOOD.subarray(0, GOOD.length >> 1));
      setImmediate(() => res.destroy());
    },
    '/stall.tar.gz': (_req, res) => {
      res.writeHead(200, { 'content-length': GOOD.length });
      res.write(GOOD.subarray(0, 100)); // then nothing, connection held open
    },
    '/stall-headers.tar.gz': () => {}, // never answers
    '/redirect.tar.gz': { status: 302, body: '', headers: { location: '/good.tar.gz' } },
    '/loop.tar.gz': { status: 302, body: '', headers: { location: '/loop.tar.gz' } },
    '/big.tar.gz': { body: Buffer.concat([GOOD, Buffer.alloc(2 * 1024 * 1024)]) },
    '/chunked-big.tar.gz': (_req, res) => {
      res.writeHead(200); // no length: the cap is checked per chunk
      const chunk = Buffer.alloc(256 * 1024);
      let n = 0;
      const more = () => {
        while (n++ < 64) if (!res.write(chunk)) return res.once('drain', more);
        res.end();
      };
      more();
    },
  };
  server = await serve(routes);
});

after(() => server?.close());

describe('binary distributions', () => {
  for (const ext of ['tar.gz', 'tgz', 'tar.bz2', 'zip', 'deflated.zip']) {
    it(`installs a .${ext} archive, launches its cmd directly and talks ACP to it`, async () => {
      const m = manager([
        binaryAgent('fixture', '1.0.0', TARGET, server.url(`/good${ext === 'deflated.zip' ? '-' : '.'}${ext}`), {
          cmd: `./bin/${AGENT}`,
        }),
      ]);
      const res = await m.install('fixture');
      assert.equal(res.installed, true);
      assert.equal(res.kind, 'binary');
      const launch = await m.launch('fixture');
      assert.equal(launch.command, join(m.storeDir, 'agents', 'fixture', '1.0.0', 'dist', 'bin', AGENT));
      if (POSIX) assert.ok(statSync(launch.command).mode & 0o100, 'executable');
      const client = await AcpClient.connect({ ...launch });
      assert.equal(client.agent.agentInfo.name, 'mock-agent');
      await client.close();
      assert.deepEqual(m.installed(), [{ id: 'fixture', version: '1.0.0', kind: 'binary', dir: res.dir }]);
    });
  }

  it('installs a raw binary (no archive) under the name of its cmd', async () => {
    const m = manager([binaryAgent('raw', '2.0.0', TARGET, server.url('/agent'), { cmd: AGENT })]);
    const launch = await m.launch('raw');
    const client = await AcpClient.connect(launch);
    assert.equal(client.agent.agentInfo.name, 'mock-agent');
    await client.close();
  });

  it('keeps symlinks and hardlinks that stay inside the archive', {
    skip: WINDOWS && 'symlinks are refused on Windows (the refusals below)',
  }, async () => {
    const m = manager([binaryAgent('links', '1.0.0', TARGET, server.url('/inside-links.tar.gz'), { cmd: AGENT })]);
    const { dir } = await m.install('links');
    assert.equal(readlinkSync(join(dir, 'dist', AGENT)), 'lib/real-agent');
    assert.deepEqual(readFileSync(join(dir, 'dist', 'copy')), PROGRAM);
    assert.equal(statSync(join(dir, 'dist', 'suid')).mode & 0o7777, 0o755, 'no setuid/setgid bits');
  });

  it('checks the sha256 in any case and refuses a mismatch, leaving nothing installed', async () => {
    const ok = manager([
      binaryAgent('sum', '1.0.0', TARGET, server.url('/good.tar.gz'), {
        cmd: `./bin/${AGENT}`,
        sha256: sha256(GOOD).toUpperCase(),
      }),
    ]);
    await ok.install('sum');
    assert.equal(
      JSON.parse(readFileSync(join(ok.storeDir, 'agents', 'sum', '1.0.0', 'install.json'), 'utf8')).verified,
      true,
    );
    const tampered = sha256(Buffer.concat([GOOD, Buffer.from('x')]));
    const m = manager([
      binaryAgent('sum', '1.0.0', TARGET, server.url('/good.tar.gz'), { cmd: `./bin/${AGENT}`, sha256: tampered }),
    ]);
    await assert.rejects(
      m.install('sum'),
      (err) => err.code === 'ERR_ACP_AGENT_INTEGRITY' && err.actual === sha256(GOOD) && err.expected === tampered,
    );
    assertClean(m, 'sum');
  });

  const refusals = [
    ['traversal (..)', '/traversal.tar.gz', /climbs out/],
    ['an absolute path', '/absolute.tar.gz', /absolute path/],
    ['a symlink leaving the target', '/symlink.tar.gz', /points outside/],
    ['a symlink placed through another symlink', '/symlink-chain.tar.gz', /outside the target/],
    ['a write through a symlink plus ..', '/write-through-link.tar.gz', /climbs out/],
    ['a symlink that resolves outside only on disk', '/link-via-dot.tar.gz', /resolves outside the target/],
    [
      'a write through a symlink that resolves outside',
      '/write-via-dot.tar.gz',
      /through a symlink leaving the target/,
    ],
    ['one name twice', '/twice.tar.gz', /appears twice/],
    ['a hardlink to /etc/passwd', '/hardlink.tar.gz', /absolute path/],
    ['a hardlink to ../outside', '/hardlink-dotdot.tar.gz', /climbs out/],
    ['a character device', '/device.tar.gz', /CharacterDevice/],
    ['a FIFO', '/fifo.tar.gz', /FIFO/],
    ['zip-slip', '/zip-slip.zip', /climbs out/],
    ['a zip symlink to /etc', '/zip-symlink.zip', /absolute path/],
    ['a zip name with backslashes and ..', '/zip-backslash.zip', /climbs out/],
  ];
  // Windows refuses every symlink entry, before the rule each of these breaks.
  const LINKED = new Set([
    '/symlink.tar.gz',
    '/symlink-chain.tar.gz',
    '/write-through-link.tar.gz',
    '/link-via-dot.tar.gz',
    '/write-via-dot.tar.gz',
    '/zip-symlink.zip',
  ]);
  for (const [what, path, rule] of refusals) {
    const message = WINDOWS && LINKED.has(path) ? /symlinks are not unpacked on Windows/ : rule;
    it(`refuses an archive with ${what} and leaves nothing behind`, async () => {
      const m = manager([binaryAgent('bad', '1.0.0', TARGET, server.url(path), { cmd: AGENT })]);
      await assert.rejects(
        m.install('bad'),
        (err) => err.code === 'ERR_ACP_AGENT_ARCHIVE' && message.test(err.message),
      );
      assertClean(m, 'bad');
      for (const f of [`${OUTSIDE}-dotdot`, `${OUTSIDE}-abs`, '/tmp/acp-zip-slip'])
        assert.equal(existsSync(f), false, `${f} was written`);
    });
  }

  it('stops a decompression bomb at the byte cap, and an archive over the entry cap', async () => {
    const m = manager([binaryAgent('bomb', '1.0.0', TARGET, server.url('/bomb.tar.gz'), { cmd: AGENT })], {
      limits: { maxUnpackedBytes: 8 * 1024 * 1024 },
    });
    await assert.rejects(
      m.install('bomb'),
      (err) => err.code === 'ERR_ACP_AGENT_ARCHIVE' && /more than 8388608 bytes/.test(err.message),
    );
    assertClean(m, 'bomb');
    const z = manager([binaryAgent('zbomb', '1.0.0', TARGET, server.url('/bomb.zip'), { cmd: AGENT })], {
      limits: { maxUnpackedBytes: 8 * 1024 * 1024 },
    });
    await assert.rejects(
      z.install('zbomb'),
      (err) => err.code === 'ERR_ACP_AGENT_ARCHIVE' && /more than 8388608 bytes/.test(err.message),
    );
    assertClean(z, 'zbomb');
    const n = manager([binaryAgent('many', '1.0.0', TARGET, server.url('/many.tar.gz'), { cmd: AGENT })], {
      limits: { maxEntries: 100 },
    });
    await assert.rejects(
      n.install('many'),
      (err) => err.code === 'ERR_ACP_AGENT_ARCHIVE' && /more than 100 entries/.test(err.message),
    );
    assertClean(n, 'many');
  });

  it('keeps the default caps when the manager is given no limits, or only some', async () => {
    for (const extra of [{}, { limits: { maxDownloadBytes: 64 * 1024 * 1024 } }]) {
      const m = manager([binaryAgent('many', '1.0.0', TARGET, server.url('/many.zip'), { cmd: AGENT })], extra);
      await assert.rejects(
        m.install('many'),
        (err) => err.code === 'ERR_ACP_AGENT_ARCHIVE' && /more than 20000 entries/.test(err.message),
      );
      assertClean(m, 'many');
    }
  });
});

describe('downloads', () => {
  const failing = [
    ['a gzip Content-Encoding', '/gzip-encoded.tar.gz', {}, /Content-Encoding: gzip/],
    ['a body cut short', '/truncated.tar.gz', {}, /cut short|connection failed/],
    ['a server that stalls mid-body', '/stall.tar.gz', { stallMs: 300 }, /sent nothing for 300 ms/],
    ['a server that never answers', '/stall-headers.tar.gz', { stallMs: 300 }, /no answer within 300 ms/],
    ['a redirect loop', '/loop.tar.gz', { maxRedirects: 3 }, /more than 3 redirects/],
    ['a declared size over the cap', '/big.tar.gz', { maxDownloadBytes: 1024 * 1024 }, /over the 1048576-byte cap/],
    [
      'an undeclared size over the cap',
      '/chunked-big.tar.gz',
      { maxDownloadBytes: 1024 * 1024 },
      /over the 1048576-byte cap/,
    ],
  ];
  for (const [what, path, limits, message] of failing) {
    it(`refuses ${what}`, async () => {
      const m = manager([binaryAgent('dl', '1.0.0', TARGET, server.url(path), { cmd: `./bin/${AGENT}` })], { limits });
      await assert.rejects(
        m.install('dl'),
        (err) => err.code === 'ERR_ACP_AGENT_DOWNLOAD' && message.test(err.message),
      );
      assertClean(m, 'dl');
    });
  }

  it('refuses an https download redirected to http (checked on the redirect itself)', async () => {
    const { fetchFollowing } = require('../lib/agents/download.js');
    // A stand-in for the TLS server's answer: this machine has no certificate for 127.0.0.1.
    const fakeTls = async (url) =>
      url.startsWith('https:')
        ? new Response(null, { status: 302, headers: { location: server.url('/good.tar.gz') } })
        : fetch(url);
    await assert.rejects(
      fetchFollowing('https://agents.example/a.tar.gz', { fetchImpl: fakeTls }),
      (err) => err.code === 'ERR_ACP_AGENT_DOWNLOAD' && /no downgrade/.test(err.message),
    );
  });

  it('an abort stops a stalled download: ERR_ACP_ABORTED, nothing left', async () => {
    const m = manager([binaryAgent('abort', '1.0.0', TARGET, server.url('/stall.tar.gz'), { cmd: `./bin/${AGENT}` })]);
    const controller = new AbortController();
    const pending = m.install('abort', {
      signal: controller.signal,
      onProgress: (e) => e.receivedBytes > 0 && controller.abort(),
    });
    await assert.rejects(pending, { code: 'ERR_ACP_ABORTED' });
    assertClean(m, 'abort');
  });

  it("checks the length itself: a host's fetch that lets a short body through is caught", async () => {
    // e.g. a host passing Electron's net.fetch, or a proxy that ends the body early.
    const shortFetch = async (url, init) => {
      const res = await fetch(url, init);
      const body = Buffer.from(await res.arrayBuffer()).subarray(0, GOOD.length >> 1);
      return new Response(body, { status: res.status, headers: { 'content-length': String(GOOD.length) } });
    };
    const m = manager([binaryAgent('short', '1.0.0', TARGET, server.url('/good.tar.gz'), { cmd: `./bin/${AGENT}` })], {
      fetch: shortFetch,
    });
    await assert.rejects(
      m.install('short'),
      (err) =>
        err.code === 'ERR_ACP_AGENT_DOWNLOAD' &&
        err.message.includes(`cut short: ${GOOD.length >> 1} of ${GOOD.length}`),
    );
    assertClean(m, 'short');
  });

  it('asks for identity encoding, follows a redirect, and reports progress', async () => {
    const m = manager([
      binaryAgent('redir', '1.0.0', TARGET, server.url('/redirect.tar.gz'), {
        cmd: `./bin/${AGENT}`,
        sha256: sha256(GOOD),
      }),
    ]);
    const events = [];
    await m.install('redir', { onProgress: (e) => events.push(e) });
    const req = server.requests.findLast((r) => r.path === '/good.tar.gz');
    assert.equal(req.headers['accept-encoding'], 'identity');
    const downloads = events.filter((e) => e.phase === 'download' && e.receivedBytes > 0);
    assert.ok(downloads.length > 0);
    assert.equal(downloads.at(-1).receivedBytes, GOOD.length);
    assert.equal(downloads.at(-1).totalBytes, GOOD.length);
    assert.deepEqual([...new Set(events.map((e) => e.phase))], ['download', 'extract', 'done']);
  });
});

describe('the store', () => {
  it('list, installed, pin, update, remove', async () => {
    const storeDir = tmp();
    const v1 = binaryAgent('upd', '1.0.0', TARGET, server.url('/good.tar.gz'), { cmd: `./bin/${AGENT}` });
    const v2 = binaryAgent('upd', '2.0.0', TARGET, server.url('/good.zip'), { cmd: `./bin/${AGENT}` });
    const indexV1 = { version: '1', agents: [v1] };
    const indexV2 = { version: '2', agents: [v2] };
    server.routes['/index.json'] = { body: JSON.stringify(indexV1) };
    const m = new AgentManager({ storeDir, index: server.url('/index.json') });
    let [entry] = await m.list();
    assert.deepEqual(
      { id: entry.id, version: entry.version, installed: entry.installed, installable: entry.installable },
      { id: 'upd', version: '1.0.0', installed: [], installable: true },
    );
    await m.install('upd');
    server.routes['/index.json'] = { body: JSON.stringify(indexV2) };
    m.pin('upd', '1.0.0');
    assert.deepEqual(await m.update('upd'), { id: 'upd', from: ['1.0.0'], to: '1.0.0', updated: false });
    assert.match((await m.launch('upd')).command, /upd[\\/]1\.0\.0[\\/]/, 'a pinned agent launches its pinned version');
    m.unpin('upd');
    assert.deepEqual(await m.update('upd', { prune: true }), {
      id: 'upd',
      from: ['1.0.0'],
      to: '2.0.0',
      updated: true,
    });
    assert.deepEqual(
      m.installed().map((i) => i.version),
      ['2.0.0'],
    );
    [entry] = await m.list();
    assert.deepEqual(entry.installed, ['2.0.0']);
    assert.equal(await m.remove('upd'), true);
    assert.deepEqual(m.installed(), []);
    assert.equal(await m.remove('upd'), false);
  });

  it('two processes installing one agent at once: one download, one complete install', async () => {
    const storeDir = tmp();
    const before = server.hits.get('/good.tgz') ?? 0;
    const index = {
      version: '1',
      agents: [binaryAgent('race', '1.0.0', TARGET, server.url('/good.tgz'), { cmd: `./bin/${AGENT}` })],
    };
    const script = `
      const { AgentManager } = require(${JSON.stringify(require.resolve('../index.js'))});
      const m = new AgentManager({ storeDir: ${JSON.stringify(storeDir)}, index: ${JSON.stringify(index)} });
      m.install('race').then((r) => console.log(JSON.stringify(r)), (e) => { console.error(e); process.exit(1); });`;
    const run = () =>
      new Promise((resolve, reject) => {
        const child = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
        let out = '';
        child.stdout.on('data', (d) => (out += d));
        child.on('exit', (code) => (code === 0 ? resolve(JSON.parse(out)) : reject(new Error(`exit ${code}`))));
      });
    const results = await Promise.all([run(), run(), run()]);
    assert.equal(results.filter((r) => r.installed).length, 1, 'exactly one process installed it');
    assert.equal(server.hits.get('/good.tgz') - before, 1, 'one download');
    const m = new AgentManager({ storeDir, index });
    assert.deepEqual(
      m.installed().map((i) => i.version),
      ['1.0.0'],
    );
    assert.deepEqual(readdirSync(join(storeDir, 'tmp')), []);
    assert.deepEqual(readdirSync(join(storeDir, 'locks')), []);
  });

  it('rename wins: a second finished copy of a version is thrown away, the first stays whole', () => {
    const { Store } = require('../lib/agents/store.js');
    const store = new Store(tmp());
    const first = store.staging('dup');
    writeFileSync(join(first, 'which'), 'first');
    assert.equal(store.commit(first, 'dup', '1.0.0', { kind: 'binary', entry: 'which' }), true);
    const second = store.staging('dup');
    writeFileSync(join(second, 'which'), 'second');
    assert.equal(store.commit(second, 'dup', '1.0.0', { kind: 'binary', entry: 'which' }), false);
    assert.equal(readFileSync(join(store.versionDir('dup', '1.0.0'), 'which'), 'utf8'), 'first');
    assert.deepEqual(readdirSync(join(store.dir, 'tmp')), []);
  });

  it('a version left by another store format is reinstalled, not launched', async () => {
    const m = manager([binaryAgent('old', '1.0.0', TARGET, server.url('/good.tar.gz'), { cmd: `./bin/${AGENT}` })]);
    mkdirSync(join(m.storeDir, 'agents', 'old', '1.0.0'), { recursive: true });
    writeFileSync(
      join(m.storeDir, 'agents', 'old', '1.0.0', 'install.json'),
      JSON.stringify({ id: 'old', version: '1.0.0', kind: 'binary', entry: 'gone' }),
    );
    assert.deepEqual(m.installed(), []);
    assert.equal((await m.install('old')).installed, true);
    assert.ok(statSync((await m.launch('old')).command).isFile());
  });

  it('takes over a lock left by a dead installer', async () => {
    const storeDir = tmp();
    mkdirSync(join(storeDir, 'locks'), { recursive: true });
    // A pid that is not running: a child that has exited.
    const dead = spawn(process.execPath, ['-e', '']);
    await new Promise((r) => dead.on('exit', r));
    writeFileSync(join(storeDir, 'locks', 'stale@1.0.0.lock'), JSON.stringify({ pid: dead.pid, at: Date.now() }));
    const m = manager([binaryAgent('stale', '1.0.0', TARGET, server.url('/good.tar.gz'), { cmd: `./bin/${AGENT}` })], {
      storeDir,
    });
    const r = await m.install('stale');
    assert.equal(r.installed, true);
  });

  it('refuses an id or version that would leave the store', async () => {
    const m = manager([]);
    await assert.rejects(m.remove('../x'), { code: 'ERR_ACP_INVALID_ARGUMENT' });
    assert.throws(() => m.pin('ok', '../../x'), { code: 'ERR_ACP_INVALID_ARGUMENT' });
    await assert.rejects(m.install('nope'), { code: 'ERR_ACP_AGENT_NOT_FOUND' });
  });
});

describe('launch and probe', () => {
  it('the launched process is the agent itself (no wrapper) and it dies with the client', {
    skip: !LINUX && 'needs /proc',
  }, async () => {
    const m = manager([binaryAgent('tree', '1.0.0', TARGET, server.url('/good.tar.gz'), { cmd: `./bin/${AGENT}` })]);
    const client = await AcpClient.connect(await m.launch('tree'));
    const pid = client.pid;
    assertNoWrapper(assert, pid);
    await client.close();
    const stat = procStat(pid);
    assert.ok(stat === null || stat[0] === 'Z', 'the agent is gone');
  });

  it('the agent dies with its host, even when the host is SIGKILLed', { skip: !LINUX && 'needs /proc' }, async () => {
    const storeDir = tmp();
    const index = {
      version: '1',
      agents: [binaryAgent('orphan', '1.0.0', TARGET, server.url('/good.tar.gz'), { cmd: `./bin/${AGENT}` })],
    };
    const script = `
      const { AcpClient, AgentManager } = require(${JSON.stringify(require.resolve('../index.js'))});
      const m = new AgentManager({ storeDir: ${JSON.stringify(storeDir)}, index: ${JSON.stringify(index)} });
      AcpClient.connect({ agent: 'orphan', agents: m }).then((c) => console.log(c.pid));
      setInterval(() => {}, 1000);`;
    const host = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
    const pid = await new Promise((resolve) => host.stdout.once('data', (d) => resolve(Number(String(d).trim()))));
    assert.ok(procStat(pid), 'the agent runs');
    host.kill('SIGKILL');
    await new Promise((r) => host.on('exit', r));
    // Hang guard only: the reaper kills it as soon as the host's lifeline closes.
    for (let i = 0; i < 300 && procStat(pid) && procStat(pid)[0] !== 'Z'; i++)
      await new Promise((r) => setTimeout(r, 50));
    const stat = procStat(pid);
    assert.ok(stat === null || stat[0] === 'Z', 'the agent is gone with its host');
  });

  it('probes: ready with capabilities, needs-auth, failed with the stderr tail; cached per version', async () => {
    const { MOCK_AGENT } = await import('./agents-fixtures.mjs');
    const m = manager([binaryAgent('probed', '1.0.0', TARGET, server.url('/good.tar.gz'), { cmd: `./bin/${AGENT}` })], {
      presets: {
        'mock-ready': { command: process.execPath, args: [MOCK_AGENT] },
        'mock-auth': { command: process.execPath, args: [MOCK_AGENT, '--require-auth'] },
        broken: {
          command: process.execPath,
          args: ['-e', 'console.error("cannot find config.toml"); process.exit(3)'],
        },
      },
    });
    const ready = await m.probe('mock-ready');
    assert.equal(ready.status, 'ready');
    assert.equal(ready.agentCapabilities.loadSession, true);
    const auth = await m.probe('mock-auth');
    assert.equal(auth.status, 'needs-auth');
    assert.deepEqual(
      auth.authMethods.map((a) => a.id),
      ['mock-login'],
    );
    const failed = await m.probe('broken');
    assert.equal(failed.status, 'failed');
    assert.match(failed.stderrTail, /cannot find config\.toml/);
    const first = await m.probe('probed');
    assert.equal(first.status, 'ready');
    assert.equal(first.version, '1.0.0');
    const again = await m.probe('probed');
    assert.equal(again.checkedAt, first.checkedAt, 'the cached probe of this version');
    assert.equal((await m.info('probed')).probe.status, 'ready');
    const fresh = await m.probe('probed', { refresh: true });
    assert.notEqual(fresh.checkedAt, first.checkedAt);
  });

  it('AcpClient.connect({ agent, agents }) resolves the id, installs it and connects', async () => {
    const storeDir = tmp();
    const index = {
      version: '1',
      agents: [binaryAgent('by-name', '1.0.0', TARGET, server.url('/good.tar.gz'), { cmd: `./bin/${AGENT}` })],
    };
    const client = await AcpClient.connect({ agent: 'by-name', agents: { storeDir, index }, cwd: storeDir });
    assert.equal(client.agent.agentInfo.name, 'mock-agent');
    await client.close();
    await assert.rejects(AcpClient.connect({ agent: 'missing', agents: { storeDir, index } }), {
      code: 'ERR_ACP_AGENT_NOT_FOUND',
    });
    await assert.rejects(AcpClient.connect({ agent: 'by-name', command: 'x', agents: { storeDir, index } }), {
      code: 'ERR_ACP_INVALID_ARGUMENT',
    });
  });

  it('npx agents run as <node> <entry>; under Electron with ELECTRON_RUN_AS_NODE=1', () => {
    const { launchOptions } = require('../lib/agents/launch.js');
    const record = { kind: 'npx', entry: 'node_modules/pkg/dist/index.js', args: ['--acp'], env: { A: '1' } };
    const plain = launchOptions(record, '/store/x/1.0.0', { electron: false });
    assert.deepEqual(plain, {
      command: process.execPath,
      args: [join('/store/x/1.0.0', 'node_modules/pkg/dist/index.js'), '--acp'],
      env: { A: '1' },
    });
    assert.equal(launchOptions(record, '/s', { electron: true }).env.ELECTRON_RUN_AS_NODE, '1');
    // A Node the host chose is a real Node: nothing added.
    assert.equal(
      launchOptions(record, '/s', { electron: true, node: '/opt/node/bin/node' }).env.ELECTRON_RUN_AS_NODE,
      undefined,
    );
  });
});
