// scripts/release-notes.mjs, as the publish job runs it: on a copy of npm/
// with a file in every platform package (this platform's: the real build),
// its SHA-256 table must match the files (and `sha256sum --check`, and what `doctor` prints).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { copyFileSync, cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { platformPackages } from '../scripts/platform-packages.mjs';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const SCRIPT = join(ROOT, 'scripts', 'release-notes.mjs');
const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'));
const PLATFORM_PACKAGES = platformPackages(pkg);
const sha256 = (bytes) => createHash('sha256').update(bytes).digest('hex');

function doctorReport() {
  const child = spawnSync(process.execPath, [join(ROOT, 'cli', 'acp-native.mjs'), 'doctor', '--json'], {
    encoding: 'utf8',
  });
  return JSON.parse(child.stdout);
}

/** A copy of npm/ where every platform package holds a distinct file as its binary. */
function filledNpmDir(t) {
  const dir = mkdtempSync(join(tmpdir(), 'acp-native-release-notes-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const npmDir = join(dir, 'npm');
  cpSync(join(ROOT, 'npm'), npmDir, { recursive: true });
  const doctor = doctorReport();
  const build = readFileSync(doctor.binary.path);
  const files = new Map();
  for (const name of Object.keys(PLATFORM_PACKAGES)) {
    const platformDir = join(npmDir, name.slice('acp-native-'.length));
    const main = JSON.parse(readFileSync(join(platformDir, 'package.json'), 'utf8')).main;
    // This platform's package gets the build itself; the others (which
    // cannot be built here) a small stand-in each, so each sum differs.
    const bytes = name === doctor.package.name ? build : Buffer.from(`stand-in for the ${name} binary\n`);
    writeFileSync(join(platformDir, main), bytes);
    files.set(main, bytes);
  }
  return { dir, npmDir, files, doctor };
}

function run(args) {
  return spawnSync(process.execPath, [SCRIPT, ...args], { encoding: 'utf8' });
}

test('the release notes list the SHA-256 of every platform binary', (t) => {
  const { dir, npmDir, files, doctor } = filledNpmDir(t);
  const notes = join(dir, 'release-notes.md');
  const sums = join(dir, 'SHA256SUMS');
  const child = run(['--npm-dir', npmDir, '--notes', notes, '--sums', sums]);
  assert.equal(child.status, 0, child.stderr);

  const md = readFileSync(notes, 'utf8');
  const rows = [...md.matchAll(/^\| `(\S+)@(\S+)` \| `(\S+)` \| (\d+) \| `([0-9a-f]{64})` \|$/gm)];
  assert.equal(rows.length, Object.keys(PLATFORM_PACKAGES).length, md);
  for (const [, name, version, file, bytes, hash] of rows) {
    assert.equal(version, PLATFORM_PACKAGES[name]);
    assert.equal(Number(bytes), files.get(file).length);
    assert.equal(hash, sha256(files.get(file)), file);
  }
  assert.equal(new Set(rows.map((r) => r[5])).size, rows.length, 'distinct binaries, distinct sums');
  // What a user of this platform sees in `acp-native doctor` is in the table.
  assert.ok(
    md.includes(`| \`${doctor.package.name}@${pkg.version}\` |`) && md.includes(`\`${doctor.binary.sha256}\``),
    md,
  );

  const lines = readFileSync(sums, 'utf8').trimEnd().split('\n');
  assert.deepEqual(lines.map((l) => l.split('  ')[1]).sort(), [...files.keys()].sort());
  for (const line of lines) {
    const [hash, file] = line.split('  ');
    assert.equal(hash, sha256(files.get(file)));
  }
});

test('SHA256SUMS passes sha256sum --check next to the release assets', {
  skip: spawnSync('sha256sum', ['--version']).status !== 0 && 'needs sha256sum (coreutils)',
}, (t) => {
  const { dir, npmDir, files } = filledNpmDir(t);
  const assets = join(dir, 'assets');
  mkdirSync(assets);
  for (const name of Object.keys(PLATFORM_PACKAGES)) {
    const platformDir = join(npmDir, name.slice('acp-native-'.length));
    const main = JSON.parse(readFileSync(join(platformDir, 'package.json'), 'utf8')).main;
    copyFileSync(join(platformDir, main), join(assets, main));
  }
  const child = run(['--npm-dir', npmDir, '--sums', join(assets, 'SHA256SUMS')]);
  assert.equal(child.status, 0, child.stderr);
  assert.match(child.stdout, /^## Native binaries/, 'without --notes the Markdown goes to stdout');
  const check = spawnSync('sha256sum', ['--check', '--strict', 'SHA256SUMS'], { cwd: assets, encoding: 'utf8' });
  assert.equal(check.status, 0, check.stdout + check.stderr);
  // A swapped binary fails the check.
  const [first] = files.keys();
  writeFileSync(join(assets, first), 'tampered');
  const tampered = spawnSync('sha256sum', ['--check', '--strict', 'SHA256SUMS'], { cwd: assets, encoding: 'utf8' });
  assert.notEqual(tampered.status, 0);
  assert.match(tampered.stdout, new RegExp(`${first.replaceAll('.', '\\.')}: FAILED`));
});

test('a platform package without its binary fails the release', (t) => {
  const { npmDir } = filledNpmDir(t);
  const name = Object.keys(PLATFORM_PACKAGES).at(-1);
  const platformDir = join(npmDir, name.slice('acp-native-'.length));
  const main = JSON.parse(readFileSync(join(platformDir, 'package.json'), 'utf8')).main;
  rmSync(join(platformDir, main));
  const child = run(['--npm-dir', npmDir]);
  assert.equal(child.status, 1);
  assert.match(child.stderr, new RegExp(`^release-notes: ${name}: no binary at .*${main.replaceAll('.', '\\.')}`));
  assert.equal(child.stdout, '');
});
