// Files the package writes where the user said (saveHistory, `record --out`,
// `export --out`): never through a symlink, never into a FIFO or device,
// never blocking the host's libuv pool; written whole and renamed.
import { test } from 'node:test';
import { createRequire } from 'node:module';
import assert from 'node:assert/strict';
import { spawn, execFileSync } from 'node:child_process';
import {
  chmodSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
  existsSync,
  lstatSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { mockSession, MOCK_AGENT } from './helpers.mjs';

const CLI = fileURLToPath(new URL('../cli/acp-native.mjs', import.meta.url));
const INDEX = fileURLToPath(new URL('../index.js', import.meta.url));
const posix = process.platform !== 'win32';

function scratch(t) {
  const dir = mkdtempSync(join(tmpdir(), 'acp-native-safe-write-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** Run `node args` with stdin `input`; killed after a generous deadline (a hang is a failure, reported as such). */
function run(args, { input = '', env = {} } = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { stdio: ['pipe', 'pipe', 'pipe'], env: { ...process.env, ...env } });
    let stdout = '';
    let stderr = '';
    let hung = false;
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    const deadline = setTimeout(() => {
      hung = true;
      child.kill('SIGKILL');
    }, 60_000);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(deadline);
      resolve({ code, stdout, stderr, hung });
    });
    child.stdin.end(input);
  });
}

test('saveHistory replaces a regular file whole and leaves no temporary file', async (t) => {
  const dir = scratch(t);
  const file = join(dir, 'history.ndjson');
  writeFileSync(file, 'old content that is longer than nothing\n'.repeat(1000));
  if (posix) chmodSync(file, 0o600);
  const { client, sessionId } = await mockSession();
  t.after(() => client.close());
  await client.prompt({ sessionId, prompt: 'text:2' });
  const n = await client.saveHistory(file);
  const lines = readFileSync(file, 'utf8').trim().split('\n');
  assert.equal(lines.length, n);
  assert.deepEqual(
    lines.map((l) => JSON.parse(l).seq),
    client.history().map((r) => r.seq),
  );
  assert.deepEqual(readdirSync(dir), ['history.ndjson']);
  if (posix) assert.equal(statSync(file).mode & 0o777, 0o600, 'the file replaced keeps its permissions');
});

test('saveHistory to a symlink: a typed error, the file it points to untouched (and none created)', {
  skip: !posix && 'symlinks need privileges on Windows',
}, async (t) => {
  const dir = scratch(t);
  const outside = join(dir, 'outside.txt');
  writeFileSync(outside, 'precious\n');
  const link = join(dir, 'history.ndjson');
  symlinkSync(outside, link);
  const dangling = join(dir, 'dangling.ndjson');
  symlinkSync(join(dir, 'would-be-created.txt'), dangling);
  const { client } = await mockSession();
  t.after(() => client.close());

  await assert.rejects(client.saveHistory(link), { code: 'ERR_ACP_UNSAFE_PATH', fileType: 'symlink', path: link });
  await assert.rejects(client.saveHistory(dangling), { code: 'ERR_ACP_UNSAFE_PATH', fileType: 'symlink' });
  assert.equal(readFileSync(outside, 'utf8'), 'precious\n');
  assert.equal(existsSync(join(dir, 'would-be-created.txt')), false);
  assert.ok(lstatSync(link).isSymbolicLink());
  assert.deepEqual(readdirSync(dir).sort(), ['dangling.ndjson', 'history.ndjson', 'outside.txt']);
});

test('saveHistory to a device, or a symlink to one: a typed error', { skip: !posix && 'no /dev/null' }, async (t) => {
  const dir = scratch(t);
  const link = join(dir, 'null');
  symlinkSync('/dev/null', link);
  const { client } = await mockSession();
  t.after(() => client.close());
  await assert.rejects(client.saveHistory('/dev/null'), { code: 'ERR_ACP_UNSAFE_PATH', fileType: 'device' });
  await assert.rejects(client.saveHistory(link), { code: 'ERR_ACP_UNSAFE_PATH', fileType: 'symlink' });
  await assert.rejects(client.saveHistory(dir), { code: 'ERR_ACP_UNSAFE_PATH', fileType: 'directory' });
});

// In a child process with a one-thread libuv pool: a save that opened the
// FIFO would take that thread until a reader came (never), and every
// fs.promises call after it would wait too, so the child would hang.
const FIFO_HOST = `
const { AcpClient } = require(${JSON.stringify(INDEX)});
const fsp = require('node:fs/promises');
(async () => {
  const client = await AcpClient.connect({ command: process.execPath, args: [${JSON.stringify(MOCK_AGENT)}] });
  const saves = await Promise.allSettled([1, 2, 3, 4].map(() => client.saveHistory(process.argv[1])));
  const read = await fsp.readFile(process.argv[2], 'utf8');
  const stat = await fsp.stat(process.argv[1]);
  await client.close();
  console.log(JSON.stringify({ codes: saves.map((s) => s.reason && s.reason.code), types: saves.map((s) => s.reason && s.reason.fileType), read, fifo: stat.isFIFO() }));
})();
`;

test('saveHistory to a FIFO: a typed error at once, and fs.promises keeps working (one-thread pool)', {
  skip: !posix && 'no mkfifo',
}, async (t) => {
  const dir = scratch(t);
  const fifo = join(dir, 'history.ndjson');
  execFileSync('mkfifo', [fifo]);
  const other = join(dir, 'other.txt');
  writeFileSync(other, 'still readable');
  const res = await run(['-e', FIFO_HOST, fifo, other], { env: { UV_THREADPOOL_SIZE: '1' } });
  assert.equal(res.hung, false, `the host hung (a pool thread blocked on the FIFO); stderr: ${res.stderr}`);
  assert.equal(res.code, 0, res.stderr);
  const out = JSON.parse(res.stdout);
  assert.deepEqual(out.codes, Array(4).fill('ERR_ACP_UNSAFE_PATH'));
  assert.deepEqual(out.types, Array(4).fill('fifo'));
  assert.equal(out.read, 'still readable');
  assert.equal(out.fifo, true, 'the FIFO is still there');
});

test('record --out and export --out refuse a symlink or FIFO at the target before doing anything', {
  skip: !posix && 'no mkfifo',
}, async (t) => {
  const dir = scratch(t);
  const outside = join(dir, 'outside.txt');
  writeFileSync(outside, 'precious\n');
  const link = join(dir, 'rec.ndjson');
  symlinkSync(outside, link);
  const fifo = join(dir, 'fifo.ndjson');
  execFileSync('mkfifo', [fifo]);

  const rec = await run([CLI, 'record', '--out', link, '--', process.execPath, MOCK_AGENT], { input: 'text:1\n' });
  assert.equal(rec.hung, false);
  assert.equal(rec.code, 1);
  assert.match(rec.stderr, /refusing to write .*rec\.ndjson: it is a symbolic link/);
  assert.equal(readFileSync(outside, 'utf8'), 'precious\n');

  const recFifo = await run([CLI, 'record', '--out', fifo, '--', process.execPath, MOCK_AGENT], { input: 'text:1\n' });
  assert.equal(recFifo.hung, false);
  assert.equal(recFifo.code, 1);
  assert.match(recFifo.stderr, /it is a FIFO/);

  // A real recording to export from.
  const good = join(dir, 'good.ndjson');
  const made = await run([CLI, 'record', '--out', good, '--', process.execPath, MOCK_AGENT], { input: 'text:1\n' });
  assert.equal(made.code, 0, made.stderr);
  assert.deepEqual(
    readdirSync(dir).sort(),
    ['fifo.ndjson', 'good.ndjson', 'outside.txt', 'rec.ndjson'],
    'no temporary file left',
  );

  for (const target of [link, fifo]) {
    const res = await run([CLI, 'export', '--out', target, good]);
    assert.equal(res.hung, false, 'export never opens the FIFO');
    assert.equal(res.code, 1);
    assert.match(res.stderr, /refusing to write/);
  }
  assert.equal(readFileSync(outside, 'utf8'), 'precious\n');
  const out = join(dir, 'out.md');
  const ok = await run([CLI, 'export', '--out', out, good]);
  assert.equal(ok.code, 0, ok.stderr);
  assert.match(readFileSync(out, 'utf8'), /chunk0/);
});

// The temporary file holds the data (a history or recording may carry
// secrets) before it has the target's permissions: anyone who opens it in
// that window keeps the descriptor after a chmod. It is created private
// and widened only once the data is complete.
test('the temporary file is private from its creation; the result has the usual permissions', {
  skip: !posix && 'POSIX modes',
}, async (t) => {
  const require = createRequire(import.meta.url);
  const fsp = require('node:fs/promises');
  const { writeFileSafely, SafeFileWriter } = require('../lib/safe-write.js');
  const dir = scratch(t);
  const umask = process.umask(0o022);
  t.after(() => process.umask(umask));

  const realOpen = fsp.open;
  const modesAtOpen = [];
  fsp.open = async (path, ...rest) => {
    const handle = await realOpen(path, ...rest);
    modesAtOpen.push(statSync(path).mode & 0o777);
    return handle;
  };
  t.after(() => (fsp.open = realOpen));
  const locked = join(dir, 'locked.ndjson');
  writeFileSync(locked, 'old\n');
  chmodSync(locked, 0o600);
  await writeFileSafely(locked, 'secret\n');
  await writeFileSafely(join(dir, 'new.ndjson'), 'secret\n');
  fsp.open = realOpen;
  assert.deepEqual(modesAtOpen, [0o600, 0o600], 'the temporary files, as created');
  assert.equal(statSync(locked).mode & 0o777, 0o600, 'a replaced file keeps its mode');
  assert.equal(statSync(join(dir, 'new.ndjson')).mode & 0o777, 0o644, 'a new file: 0666 less the umask');

  const writer = new SafeFileWriter(join(dir, 'recording.ndjson'));
  writer.write('secret\n');
  assert.equal(statSync(writer.tempPath).mode & 0o777, 0o600, 'a recording in progress');
  writer.commit();
  assert.equal(statSync(join(dir, 'recording.ndjson')).mode & 0o777, 0o644);
});

// New content is not the program the setuid/setgid bits were granted to
// (a write through the file would clear them too).
test('a replaced setuid/setgid file keeps its permissions, not the set-id bits', {
  skip: !posix && 'POSIX modes',
}, async (t) => {
  const require = createRequire(import.meta.url);
  const { writeFileSafely, SafeFileWriter } = require('../lib/safe-write.js');
  const dir = scratch(t);
  const a = join(dir, 'a');
  const b = join(dir, 'b');
  for (const f of [a, b]) {
    writeFileSync(f, '#!/bin/sh\n');
    chmodSync(f, 0o6750);
  }
  await writeFileSafely(a, 'agent text\n');
  const writer = new SafeFileWriter(b);
  writer.write('agent text\n');
  writer.commit();
  assert.equal(statSync(a).mode & 0o7777, 0o750);
  assert.equal(statSync(b).mode & 0o7777, 0o750);
});

// Some file systems refuse chmod (vfat, some network mounts): the file is
// then left private (0600), which is never less safe, and still written.
test('where chmod is refused, the file is still written, and left private', {
  skip: !posix && 'POSIX modes',
}, async (t) => {
  const require = createRequire(import.meta.url);
  const fs = require('node:fs');
  const fsp = require('node:fs/promises');
  const { writeFileSafely, SafeFileWriter } = require('../lib/safe-write.js');
  const dir = scratch(t);
  const probe = await fsp.open(join(dir, 'probe'), 'w');
  const FileHandle = Object.getPrototypeOf(probe);
  await probe.close();
  const refuse = () => Object.assign(new Error('EPERM: operation not permitted, chmod'), { code: 'EPERM' });
  const realChmod = FileHandle.chmod;
  const realFchmodSync = fs.fchmodSync;
  FileHandle.chmod = async () => {
    throw refuse();
  };
  fs.fchmodSync = () => {
    throw refuse();
  };
  t.after(() => {
    FileHandle.chmod = realChmod;
    fs.fchmodSync = realFchmodSync;
  });
  await writeFileSafely(join(dir, 'history.ndjson'), 'data\n');
  const writer = new SafeFileWriter(join(dir, 'recording.ndjson'));
  writer.write('data\n');
  writer.commit();
  FileHandle.chmod = realChmod;
  fs.fchmodSync = realFchmodSync;
  for (const name of ['history.ndjson', 'recording.ndjson']) {
    assert.equal(readFileSync(join(dir, name), 'utf8'), 'data\n');
    assert.equal(statSync(join(dir, name)).mode & 0o777, 0o600);
  }
});

// close() can fail (EIO, a network file system's delayed write error):
// the data may be incomplete, so it is an error and nothing is left behind.
test('a failed close is an error, the target untouched and no temporary file left', async (t) => {
  const require = createRequire(import.meta.url);
  const fsp = require('node:fs/promises');
  const { writeFileSafely } = require('../lib/safe-write.js');
  const dir = scratch(t);
  writeFileSync(join(dir, 'history.ndjson'), 'old\n');
  // A handle's close() is its own property: the handles open() returns get a failing one.
  const realOpen = fsp.open;
  fsp.open = async (...args) => {
    const handle = await realOpen(...args);
    const realClose = handle.close.bind(handle);
    handle.close = async () => {
      await realClose();
      throw Object.assign(new Error('EIO: i/o error, close'), { code: 'EIO' });
    };
    return handle;
  };
  t.after(() => (fsp.open = realOpen));
  await assert.rejects(writeFileSafely(join(dir, 'history.ndjson'), 'new\n'), { code: 'EIO' });
  fsp.open = realOpen;
  assert.equal(readFileSync(join(dir, 'history.ndjson'), 'utf8'), 'old\n');
  assert.deepEqual(readdirSync(dir), ['history.ndjson']);
});
