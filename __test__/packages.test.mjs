// The per-platform npm packages agree with the root package: a mismatch
// installs silently and fails only at require() on a user's machine.
import { test } from 'node:test';
import { execFileSync } from 'node:child_process';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync, existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { dirname, join, sep } from 'node:path';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
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

test('every napi target has an npm/ package and nothing else; the optional dependencies are added at publish', () => {
  assert.deepEqual([...root.napi.targets].sort(), Object.keys(TARGETS).sort());
  const dirs = readdirSync(join(ROOT, 'npm')).sort();
  assert.deepEqual(
    dirs,
    Object.values(TARGETS)
      .map((t) => t.dir)
      .sort(),
  );
  // `napi pre-publish` writes `optionalDependencies` (every target at the
  // root version) just before `npm publish`; pack-check checks the result.
  // Declared here, the unpublished packages would keep them out of the lock
  // file and `npm ci` would refuse it.
  assert.equal(root.optionalDependencies, undefined);
});

test('every package.json names the repository, homepage and bug tracker (a provenance publish needs them)', () => {
  const dirs = readdirSync(join(ROOT, 'npm'));
  for (const path of ['package.json', ...dirs.map((d) => `npm/${d}/package.json`)]) {
    const pkg = read(path);
    assert.equal(pkg.repository?.url, 'git+https://github.com/acp-native/acp-native.git', path);
    assert.equal(pkg.repository.directory, path === 'package.json' ? undefined : dirname(path), path);
    assert.equal(pkg.homepage, 'https://github.com/acp-native/acp-native#readme', path);
    assert.equal(pkg.bugs?.url, 'https://github.com/acp-native/acp-native/issues', path);
  }
});

test('each platform package names its binary and declares os/cpu/libc and the root engines', () => {
  const { TRIPLES } = require('../lib/loader.js');
  for (const [triple, { dir, os, cpu, libc }] of Object.entries(TARGETS)) {
    const pkg = read(`npm/${dir}/package.json`);
    const binary = `${root.napi.binaryName}.${dir}.node`;
    assert.equal(pkg.name, `acp-native-${dir}`, triple);
    assert.equal(pkg.version, root.version, pkg.name);
    assert.deepEqual(pkg.os, [os], pkg.name);
    assert.deepEqual(pkg.cpu, [cpu], pkg.name);
    assert.deepEqual(pkg.libc, libc ? [libc] : undefined, pkg.name);
    assert.equal(pkg.main, binary, pkg.name);
    assert.deepEqual(
      pkg.files,
      [binary, 'LICENSE', 'THIRD_PARTY_NOTICES.md'],
      `${pkg.name} (scripts/stage-notices.mjs copies the last two in)`,
    );
    assert.deepEqual(pkg.engines, root.engines, `${pkg.name}: engines must match the root's exactly`);
    assert.equal(pkg.license, root.license, pkg.name);
    assert.ok(existsSync(join(ROOT, `npm/${dir}/README.md`)), `${pkg.name} has a README`);
    // The loader looks for `acp-native-<dir>` / `acp-native.<dir>.node` on this target.
    assert.equal(TRIPLES[dir], triple, `lib/loader.js maps ${dir} to ${triple}`);
  }
});

test('the root package ships the CLI as a bin and lists every CLI file', () => {
  assert.deepEqual(root.bin, { 'acp-native': 'cli/acp-native.mjs' });
  const cliFiles = readdirSync(join(ROOT, 'cli'))
    .map((f) => `cli/${f}`)
    .sort();
  assert.deepEqual(root.files.filter((f) => f.startsWith('cli/')).sort(), cliFiles);
  // Exact file lists: a new lib/ file must be added to "files" or the package breaks.
  const libFiles = readdirSync(join(ROOT, 'lib'), { recursive: true })
    .filter((f) => f.endsWith('.js') || f.endsWith('.json'))
    .map((f) => `lib/${f.split(sep).join('/')}`)
    .sort();
  assert.deepEqual(root.files.filter((f) => f.startsWith('lib/')).sort(), libFiles);
  assert.match(readFileSync(join(ROOT, 'cli/acp-native.mjs'), 'utf8'), /^#!\/usr\/bin\/env node\n/);
});

test('types/acp.d.ts is what scripts/gen-types.mjs makes from the pinned SDK schema (drift check)', () => {
  const out = execFileSync(process.execPath, [join(ROOT, 'scripts/gen-types.mjs'), '--check'], { encoding: 'utf8' });
  assert.match(out, /matches @agentclientprotocol\/sdk /);
  // The SDK is pinned exactly: a caret range would let `npm install` move the schema.
  assert.match(root.devDependencies['@agentclientprotocol/sdk'], /^\d+\.\d+\.\d+$/);
});

function hasCargo() {
  try {
    execFileSync('cargo', ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

test('THIRD_PARTY_NOTICES.md names exactly the crates Cargo.lock builds the binary from (drift check)', {
  skip: !hasCargo() && 'no cargo here (the Alpine test job): the Linux, macOS and Windows jobs check it',
}, () => {
  const out = execFileSync(process.execPath, [join(ROOT, 'scripts/notices.mjs'), '--check'], { encoding: 'utf8' });
  assert.match(out, /covers all \d+ crates/);
  assert.ok(
    root.files.includes('LICENSE') && root.files.includes('THIRD_PARTY_NOTICES.md'),
    'the root package ships both',
  );
});
