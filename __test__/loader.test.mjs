// Where the native binary comes from: the lazy loader, loadNativeBinding(file)
// for bundles, the platform package, and the error a user sees when none of
// them has it. Each case runs a fresh Node process on a copy of the package
// laid out the way a user's install or bundle would be.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createRequire } from 'node:module';
import { MOCK_AGENT } from './helpers.mjs';
import { copyPackage, ROOT, runIn, SESSION } from './package-copy.mjs';

const require = createRequire(import.meta.url);
const { currentPlatform, TRIPLES } = require('../lib/loader.js');
const PLATFORM = currentPlatform();
const BINARY = `acp-native.${PLATFORM}.node`;
const BUILT = join(ROOT, BINARY);
const VERSION = require('../package.json').version;

function tempDir(t) {
  const dir = mkdtempSync(join(tmpdir(), 'acp-native-loader-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

test('every published platform has a Rust target, and this one is among them', () => {
  assert.deepEqual(Object.values(TRIPLES).sort(), [...require('../package.json').napi.targets].sort());
  assert.ok(TRIPLES[PLATFORM], `${PLATFORM} is a published platform`);
});

test('without a binary, require works and the first client names the package, the file, the triple and the docs', (t) => {
  const dir = tempDir(t);
  const pkg = copyPackage(join(dir, 'node_modules', 'acp-native'));
  const seen = runIn(dir, SESSION, [pkg, '', MOCK_AGENT]);
  assert.equal(seen.code, 'ERR_ACP_NATIVE_BINDING');
  assert.equal(seen.platform, PLATFORM);
  assert.equal(seen.triple, TRIPLES[PLATFORM]);
  assert.match(
    seen.message,
    new RegExp(`package acp-native-${PLATFORM} \\(${BINARY.replace(/\./g, '\\.')}\\): not installed`),
  );
  assert.match(seen.message, new RegExp(`Rust target ${TRIPLES[PLATFORM]}`));
  assert.match(seen.message, /loadNativeBinding\(file\)/);
  assert.match(seen.message, /https:\/\/github\.com\/acp-native\/acp-native#bundling/);
  assert.match(seen.message, /asarUnpack/);
  assert.doesNotMatch(seen.message, /wasm32|wasi|npm has a bug/i);
  // Both local places were searched, by full path.
  assert.ok(
    seen.tried.some((w) => w === join(pkg, BINARY)),
    seen.tried.join('\n'),
  );
});

test('loadNativeBinding(file) loads a binary from anywhere, e.g. next to a bundle under another name', (t) => {
  const dir = tempDir(t);
  const pkg = copyPackage(join(dir, 'node_modules', 'acp-native'));
  mkdirSync(join(dir, 'dist'));
  const moved = join(dir, 'dist', 'renamed.node');
  copyFileSync(BUILT, moved);
  const seen = runIn(dir, SESSION, [pkg, moved, MOCK_AGENT]);
  assert.deepEqual(seen, { stopReason: 'end_turn', loaded: moved });
});

test('loadNativeBinding(file) with a missing or foreign file says which file and why', (t) => {
  const dir = tempDir(t);
  const pkg = copyPackage(join(dir, 'node_modules', 'acp-native'));
  const missing = runIn(dir, SESSION, [pkg, join(dir, 'nope.node'), MOCK_AGENT]);
  assert.equal(missing.code, 'ERR_ACP_NATIVE_BINDING');
  assert.match(missing.message, new RegExp(`${join(dir, 'nope.node').replace(/[.\\]/g, '\\$&')}: not found`));
  assert.doesNotMatch(missing.message, /Installed from npm/, 'an explicit file is not an install problem');
  // What esbuild's `--loader:.node=file` puts in place of the binary: a JS
  // module exporting a path string.
  const fake = join(dir, 'fake.js');
  writeFileSync(fake, 'module.exports = "./acp-native-XYZ.node";');
  const foreign = runIn(dir, SESSION, [pkg, fake, MOCK_AGENT]);
  assert.equal(foreign.code, 'ERR_ACP_NATIVE_BINDING');
  assert.match(foreign.message, /not an acp-native binary/);
});

test('loadNativeBinding after the binary loaded elsewhere is refused; the same file is a no-op', (t) => {
  const dir = tempDir(t);
  const pkg = copyPackage(join(dir, 'node_modules', 'acp-native'));
  copyFileSync(BUILT, join(dir, 'a.node'));
  copyFileSync(BUILT, join(dir, 'b.node'));
  const seen = runIn(
    dir,
    `
    const acp = require(process.argv[2]);
    const first = acp.loadNativeBinding(process.argv[3]);
    const again = acp.loadNativeBinding(process.argv[3]);
    let other;
    try { acp.loadNativeBinding(process.argv[4]); } catch (err) { other = { code: err.code, message: err.message }; }
    console.log(JSON.stringify({ first, again, other }));`,
    [pkg, join(dir, 'a.node'), join(dir, 'b.node')],
  );
  assert.equal(seen.first, join(dir, 'a.node'));
  assert.equal(seen.again, seen.first);
  assert.equal(seen.other.code, 'ERR_ACP_INVALID_ARGUMENT');
  assert.match(seen.other.message, /already loaded from .*a\.node; call loadNativeBinding before the first client/);
});

test('the platform package is found the way npm installs it, and a version mismatch is named', (t) => {
  const dir = tempDir(t);
  const pkg = copyPackage(join(dir, 'node_modules', 'acp-native'));
  const platformDir = join(dir, 'node_modules', `acp-native-${PLATFORM}`);
  mkdirSync(platformDir);
  copyFileSync(BUILT, join(platformDir, BINARY));
  const manifest = (version) =>
    writeFileSync(
      join(platformDir, 'package.json'),
      JSON.stringify({ name: `acp-native-${PLATFORM}`, version, main: BINARY }),
    );
  manifest(VERSION);
  assert.deepEqual(runIn(dir, SESSION, [pkg, '', MOCK_AGENT]), {
    stopReason: 'end_turn',
    loaded: join(platformDir, BINARY),
  });
  manifest('0.0.1-other');
  const seen = runIn(dir, SESSION, [pkg, '', MOCK_AGENT]);
  assert.equal(seen.code, 'ERR_ACP_NATIVE_BINDING');
  assert.match(
    seen.message,
    new RegExp(`version 0\\.0\\.1-other, but acp-native is ${VERSION.replace(/\./g, '\\.')}: reinstall`),
  );
});
