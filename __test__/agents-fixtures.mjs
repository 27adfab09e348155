// Fixtures of the agent-manager tests: archives written byte by byte (so a
// hostile entry is exactly what the test says) and a 127.0.0.1 server that
// serves them and misbehaves on request.
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, realpathSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { crc32, deflateRawSync, gzipSync } from 'node:zlib';
import { createRequire } from 'node:module';
import { argvOf, programOf } from './helpers.mjs';

const { Bzip2 } = createRequire(import.meta.url)('compressjs');

let scratchRoot;
/**
 * A fresh directory for one test, under one directory of this test process
 * that goes when the process exits: stores, caches and downloads add up over
 * many runs.
 */
export function scratchDir(prefix) {
  if (!scratchRoot) {
    scratchRoot = mkdtempSync(join(tmpdir(), 'acp-agents-test-'));
    process.on('exit', () => {
      try {
        rmSync(scratchRoot, { recursive: true, force: true, maxRetries: 3 });
      } catch {}
    });
  }
  return mkdtempSync(join(scratchRoot, prefix));
}

export const MOCK_AGENT = fileURLToPath(new URL('../mock-agent/agent.mjs', import.meta.url));

/** A binary agent's program file: Windows finds how to run a file by its extension. */
export const AGENT = process.platform === 'win32' ? 'agent.cmd' : 'agent';

/**
 * The mock agent as a program: its shebang names this Node, so exec runs it
 * directly. On Windows, a batch file that runs it with this Node.
 */
export function agentProgram(extraFlags = []) {
  if (process.platform === 'win32') {
    const line = [process.execPath, MOCK_AGENT, ...extraFlags].map((a) => `"${a}"`).join(' ');
    return Buffer.from(`@echo off\r\n${line} %*\r\n`);
  }
  const src = readFileSync(MOCK_AGENT, 'utf8').replace(/^#!.*\n/, '');
  const flags = extraFlags.length ? `process.argv.push(...${JSON.stringify(extraFlags)});\n` : '';
  return Buffer.from(`#!${process.execPath}\n${flags}${src}`);
}

export const sha256 = (buf) => createHash('sha256').update(buf).digest('hex');

function octal(n, width) {
  return `${n.toString(8).padStart(width - 1, '0')}\0`;
}

/**
 * A ustar archive of `entries`: `{name, data?, type?: '0'|'2'|'1'|'3'|'5'|'6', linkname?, mode?}`
 * ('0' file, '1' hardlink, '2' symlink, '3' char device, '5' dir, '6' FIFO).
 */
export function tar(entries) {
  const blocks = [];
  for (const e of entries) {
    const data = e.data ? Buffer.from(e.data) : Buffer.alloc(0);
    const type = e.type ?? '0';
    const h = Buffer.alloc(512);
    h.write(e.name, 0, 100, 'utf8');
    h.write(octal(e.mode ?? (type === '5' ? 0o755 : 0o644), 8), 100, 'ascii');
    h.write(octal(0, 8), 108, 'ascii');
    h.write(octal(0, 8), 116, 'ascii');
    h.write(octal(type === '0' ? data.length : 0, 12), 124, 'ascii');
    h.write(octal(0, 12), 136, 'ascii');
    h.write('        ', 148, 'ascii');
    h.write(type, 156, 'ascii');
    if (e.linkname) h.write(e.linkname, 157, 100, 'utf8');
    h.write('ustar\0', 257, 'ascii');
    h.write('00', 263, 'ascii');
    let sum = 0;
    for (const b of h) sum += b;
    h.write(`${sum.toString(8).padStart(6, '0')}\0 `, 148, 'ascii');
    blocks.push(h);
    if (type === '0' && data.length) {
      blocks.push(data, Buffer.alloc((512 - (data.length % 512)) % 512));
    }
  }
  blocks.push(Buffer.alloc(1024));
  return Buffer.concat(blocks);
}

export const tarGz = (entries) => gzipSync(tar(entries));

export const tarBz2 = (entries) => Buffer.from(Bzip2.compressFile(tar(entries)));

/**
 * A zip of `entries`: `{name, data, mode?}`; mode carries the unix file type
 * (0o120777 a symlink). Stored, or deflated with `{ deflate: true }`.
 */
export function zip(entries, { deflate = false } = {}) {
  const locals = [];
  const centrals = [];
  let offset = 0;
  for (const e of entries) {
    const name = Buffer.from(e.name, 'utf8');
    const plain = Buffer.from(e.data ?? '');
    const crc = crc32(plain);
    const data = deflate ? deflateRawSync(plain) : plain;
    const method = deflate ? 8 : 0;
    const local = Buffer.alloc(30);
    local.writeUInt32LE(0x04034b50, 0);
    local.writeUInt16LE(20, 4);
    local.writeUInt16LE(0x800, 6); // utf-8 names
    local.writeUInt16LE(method, 8);
    local.writeUInt32LE(crc, 14);
    local.writeUInt32LE(data.length, 18);
    local.writeUInt32LE(plain.length, 22);
    local.writeUInt16LE(name.length, 26);
    const central = Buffer.alloc(46);
    central.writeUInt32LE(0x02014b50, 0);
    central.writeUInt16LE((3 << 8) | 20, 4); // made by unix
    central.writeUInt16LE(20, 6);
    central.writeUInt16LE(0x800, 8);
    central.writeUInt16LE(method, 10);
    central.writeUInt32LE(crc, 16);
    central.writeUInt32LE(data.length, 20);
    central.writeUInt32LE(plain.length, 24);
    central.writeUInt16LE(name.length, 28);
    central.writeUInt32LE(((e.mode ?? 0o100644) << 16) >>> 0, 38);
    central.writeUInt32LE(offset, 42);
    locals.push(local, name, data);
    centrals.push(central, name);
    offset += 30 + name.length + data.length;
  }
  const cd = Buffer.concat(centrals);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(entries.length, 8);
  end.writeUInt16LE(entries.length, 10);
  end.writeUInt32LE(cd.length, 12);
  end.writeUInt32LE(offset, 16);
  return Buffer.concat([...locals, cd, end]);
}

/**
 * A server of `routes` (path → handler(req, res) or {body, headers?,
 * status?}). `hits` counts requests per path; `requests` keeps their
 * headers. Close with `server.close()`.
 */
export async function serve(routes) {
  const hits = new Map();
  const requests = [];
  const sockets = new Set();
  const server = createServer((req, res) => {
    const path = new URL(req.url, 'http://x').pathname;
    hits.set(path, (hits.get(path) ?? 0) + 1);
    requests.push({ path, headers: req.headers });
    const route = routes[path];
    if (!route) {
      res.writeHead(404).end();
      return;
    }
    if (typeof route === 'function') return route(req, res);
    res.writeHead(route.status ?? 200, { 'content-length': Buffer.byteLength(route.body), ...route.headers });
    res.end(route.body);
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  const base = `http://127.0.0.1:${server.address().port}`;
  return {
    base,
    url: (p) => `${base}${p}`,
    hits,
    requests,
    routes,
    close: () =>
      new Promise((r) => {
        for (const s of sockets) s.destroy();
        server.close(r);
      }),
  };
}

/** One agent entry with a binary distribution for this machine's target. */
export function binaryAgent(id, version, target, archiveUrl, { sha256: sum, cmd = './agent', args } = {}) {
  return {
    id,
    name: `Agent ${id}`,
    version,
    description: 'a fixture',
    distribution: {
      binary: { [target]: { archive: archiveUrl, cmd, ...(sum ? { sha256: sum } : {}), ...(args ? { args } : {}) } },
    },
  };
}

/**
 * Linux: `pid` runs Node itself and nothing stands between it and this
 * process but the addon's reaper (a fork of this process, same cmdline):
 * no npx, npm, shell or other wrapper.
 */
export function assertNoWrapper(assert, pid) {
  const stat = (p) => {
    const s = readFileSync(`/proc/${p}/stat`, 'utf8');
    return s.slice(s.lastIndexOf(')') + 2).split(' ');
  };
  assert.equal(programOf(pid), realpathSync(process.execPath), 'the agent pid runs node itself');
  const parent = Number(stat(pid)[1]);
  if (parent === process.pid) return;
  assert.equal(Number(stat(parent)[1]), process.pid, 'the parent is a child of this process');
  assert.equal(
    argvOf(parent).join(' '),
    argvOf(process.pid).join(' '),
    'the parent is the reaper (a fork of this process), not a wrapper',
  );
}

/** A deflated zip (the kind most real archives are); `entries`: {name, data, mode}. */
export const deflatedZip = (entries) => zip(entries, { deflate: true });
