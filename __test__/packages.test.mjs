// The per-platform npm packages agree with the root package: a mismatch
// installs silently and fails only at require() on a user's machine.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync, existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { join, sep } from 'node:path';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const read = (path) => JSON.parse(readFileSync(join(ROOT, path), 'utf8'));
const root = read('package.json');

// Rust target → the napi-rs platform name and the npm os/cpu/libc fields.
const TARGETS = {
  'x86_64-unknown-linux-gnu': { dir: 'linux-x64-gnu', os: 'linux', cpu: 'x64', libc: 'glibc' },
  'aarch64-unknown-linux-gnu': { dir: 'linux-arm64-gnu', os: 'linux', cpu: 'arm64', libc: 'glibc' },
  'x86_64-unknown-linux-musl': { dir: 'linux-x64-musl', os: 'linux', cpu: 'x64', libc: 'musl' },
  'aarch64-unknown-linux-musl': { dir: 'linux-arm64-musl', os: 'linux', cpu: 'arm64', libc: 'musl' },
  'x86_64-apple-darwin': { dir: 'darwin-x64', os: 'darwin', cpu: 'x64' },
  'aarch64-apple-darwin': { dir: 'darwin-arm64', os: 'darwin', cpu: 'arm64' },
  'x86_64-pc-windows-msvc': { dir: 'win32-x64-msvc', os: 'win32', cpu: 'x64' },
  'aarch64-pc-windows-msvc': { dir: 'win32-arm64-msvc', os: 'win32', cpu: 'arm64' },
};

test('every napi target has an npm/ package, an optional dependency at the root version, and nothing else', () => {
  assert.deepEqual([...root.napi.targets].sort(), Object.keys(TARGETS).sort());
  const dirs = readdirSync(join(ROOT, 'npm')).sort();
  assert.deepEqual(dirs, Object.values(TARGETS).map((t) => t.dir).sort());
  assert.deepEqual(
    Object.entries(root.optionalDependencies).sort(),
    dirs.map((dir) => [`acp-native-${dir}`, root.version]),
  );
});

test('each platform package names its binary and declares os/cpu/libc and the root engines', () => {
  const loader = readFileSync(join(ROOT, 'binding.js'), 'utf8');
  for (const [triple, { dir, os, cpu, libc }] of Object.entries(TARGETS)) {
    const pkg = read(`npm/${dir}/package.json`);
    const binary = `${root.napi.binaryName}.${dir}.node`;
    assert.equal(pkg.name, `acp-native-${dir}`, triple);
    assert.equal(pkg.version, root.version, pkg.name);
    assert.deepEqual(pkg.os, [os], pkg.name);
    assert.deepEqual(pkg.cpu, [cpu], pkg.name);
    assert.deepEqual(pkg.libc, libc ? [libc] : undefined, pkg.name);
    assert.equal(pkg.main, binary, pkg.name);
    assert.deepEqual(pkg.files, [binary], pkg.name);
    assert.deepEqual(pkg.engines, root.engines, `${pkg.name}: engines must match the root's exactly`);
    assert.equal(pkg.license, root.license, pkg.name);
    assert.ok(existsSync(join(ROOT, `npm/${dir}/README.md`)), `${pkg.name} has a README`);
    // The generated loader looks for exactly this package and file.
    assert.ok(loader.includes(`require('${pkg.name}')`), `binding.js loads ${pkg.name}`);
    assert.ok(loader.includes(`require('./${binary}')`), `binding.js loads a local ${binary}`);
  }
});

test('the root package ships the CLI as a bin and lists every CLI file', () => {
  assert.deepEqual(root.bin, { 'acp-native': 'cli/acp-native.mjs' });
  const cliFiles = readdirSync(join(ROOT, 'cli')).map((f) => `cli/${f}`).sort();
  assert.deepEqual(root.files.filter((f) => f.startsWith('cli/')).sort(), cliFiles);
  // Exact file lists: a new lib/ file must be added to "files" or the package breaks.
  const libFiles = readdirSync(join(ROOT, 'lib'), { recursive: true })
    .filter((f) => f.endsWith('.js'))
    .map((f) => `lib/${f.split(sep).join('/')}`)
    .sort();
  assert.deepEqual(root.files.filter((f) => f.startsWith('lib/')).sort(), libFiles);
  assert.match(readFileSync(join(ROOT, 'cli/acp-native.mjs'), 'utf8'), /^#!\/usr\/bin\/env node\n/);
});
