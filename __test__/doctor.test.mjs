// `acp-native doctor` run as a user runs it (the real CLI in a child
// process) against the real build next to the package, a copy of it, and
// broken files; and the ELF reader it uses, checked against readelf.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { copyFileSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs, UsageError } from '../cli/args.mjs';
import { ElfError, SHT_GNU_VERNEED, highestGlibc, sectionHeaders, versionNeeds } from '../cli/elf.mjs';
import { TIME_SCALE } from './helpers.mjs';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const CLI = join(ROOT, 'cli', 'acp-native.mjs');
const sha256 = (file) => createHash('sha256').update(readFileSync(file)).digest('hex');

function doctor(...args) {
  const child = spawnSync(process.execPath, [CLI, 'doctor', ...args], {
    cwd: ROOT,
    encoding: 'utf8',
    timeout: 120_000 * TIME_SCALE,
  });
  assert.equal(child.error, undefined, `doctor ran: ${child.error}`);
  return { code: child.status, stdout: child.stdout, stderr: child.stderr };
}

function doctorJson(...args) {
  const { code, stdout, stderr } = doctor('--json', ...args);
  return { code, report: JSON.parse(stdout), stderr };
}

function tempDir(t) {
  const dir = mkdtempSync(join(tmpdir(), 'acp-native-doctor-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** The binary lib/loader.js loads in this checkout (the debug build, or the CI's prebuilt one). */
function builtBinary() {
  const { report } = doctorJson();
  const suffix = report.package.name.slice('acp-native-'.length);
  return join(ROOT, `acp-native.${suffix}.node`);
}

const isGlibcLinux = process.platform === 'linux' && Boolean(process.report.getReport().header.glibcVersionRuntime);
const hasReadelf = process.platform === 'linux' && spawnSync('readelf', ['--version']).status === 0;

test('doctor --json: the binary the package loads, its SHA-256, and that it loads', () => {
  const { code, report, stderr } = doctorJson();
  assert.equal(code, 0, stderr);
  assert.equal(report.version, JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).version);
  assert.equal(report.node, process.version);
  assert.equal(report.platform, process.platform);
  assert.equal(report.arch, process.arch);
  assert.ok(report.package.supported, `${report.package.name} is one of our platform packages`);
  const expected = join(ROOT, `acp-native.${report.package.name.slice('acp-native-'.length)}.node`);
  assert.equal(report.binary.path, expected);
  assert.equal(report.binary.source, 'local build next to the package');
  assert.equal(report.binary.sha256, sha256(expected));
  assert.equal(report.binary.bytes, statSync(expected).size);
  assert.deepEqual(report.load, { ok: true, errors: [] });
  assert.deepEqual(report.problems, []);
  if (isGlibcLinux) {
    assert.equal(report.libc.family, 'glibc');
    assert.equal(report.libc.version, process.report.getReport().header.glibcVersionRuntime);
    assert.match(report.binary.glibc.needs, /^GLIBC_\d+\.\d+/);
    assert.equal(report.binary.glibc.ok, true);
  }
});

test('doctor prints the same facts for people', () => {
  const binary = builtBinary();
  const { code, stdout } = doctor();
  assert.equal(code, 0);
  assert.match(stdout, /^acp-native \S+ doctor$/m);
  assert.ok(stdout.includes(`  sha256       ${sha256(binary)}\n`), stdout);
  assert.ok(stdout.includes(`  binary       ${binary}\n`), stdout);
  assert.match(stdout, /^ {2}loads {8}yes$/m);
  assert.doesNotMatch(stdout, /problem:/);
});

test('doctor --binary checks a copy (e.g. a downloaded release asset) the same way', (t) => {
  const binary = builtBinary();
  const copy = join(tempDir(t), 'downloaded.node');
  copyFileSync(binary, copy);
  const { code, report } = doctorJson('--binary', copy);
  assert.equal(code, 0);
  assert.equal(report.binary.path, copy);
  assert.equal(report.binary.source, '--binary');
  assert.equal(report.binary.sha256, sha256(binary));
  assert.equal(report.load.ok, true);
});

test('doctor --binary on a truncated copy: a clear load error, exit 1, still hashed', (t) => {
  const binary = builtBinary();
  const broken = join(tempDir(t), 'truncated.node');
  writeFileSync(broken, readFileSync(binary).subarray(0, 64 * 1024));
  const { code, report } = doctorJson('--binary', broken);
  assert.equal(code, 1);
  assert.equal(report.load.ok, false);
  assert.ok(
    report.load.errors.length > 0 && report.load.errors.every((e) => e.length > 0),
    JSON.stringify(report.load),
  );
  assert.equal(report.binary.sha256, sha256(broken));
  assert.equal(report.binary.bytes, 64 * 1024);
  assert.ok(
    report.problems.some((p) => p.startsWith('does not load: ')),
    JSON.stringify(report.problems),
  );
  if (process.platform === 'linux') {
    // The section headers lie past the cut: the ELF reader says so instead of throwing.
    assert.match(report.binary.glibc.error, /truncated or corrupt ELF/);
  }
  // And in the human report.
  const human = doctor('--binary', broken);
  assert.equal(human.code, 1);
  assert.match(human.stdout, /^ {2}loads {8}NO$/m);
  assert.match(human.stdout, /problem: {5}does not load: /);
});

test('doctor --binary on a file that is no binary at all', (t) => {
  const bogus = join(tempDir(t), 'bogus.node');
  writeFileSync(bogus, 'this is not a shared object\n');
  const { code, report } = doctorJson('--binary', bogus);
  assert.equal(code, 1);
  assert.equal(report.load.ok, false);
  assert.ok(report.load.errors.length > 0);
  if (process.platform === 'linux') assert.match(report.binary.glibc.error, /not an ELF file/);
});

test('doctor --binary on a missing file or a directory', () => {
  const missing = join(ROOT, 'no-such-dir', 'missing.node');
  const { code, report } = doctorJson('--binary', missing);
  assert.equal(code, 1);
  assert.equal(report.binary, null);
  assert.equal(report.load.ok, false);
  assert.ok(report.problems.includes(`no file at ${missing}`), JSON.stringify(report.problems));
  const dir = doctorJson('--binary', join(ROOT, 'cli'));
  assert.equal(dir.code, 1);
  assert.equal(dir.report.binary, null);
  assert.ok(
    dir.report.problems.includes(`${join(ROOT, 'cli')} is not a regular file`),
    JSON.stringify(dir.report.problems),
  );
});

test('doctor survives a binary that kills the process loading it', (t) => {
  // A module whose load kills its process stands in for a native binary
  // that crashes in its init (SIGKILL: no core dump); the verdict comes
  // from the child's death.
  const crash = join(tempDir(t), 'crash.js');
  writeFileSync(crash, "process.kill(process.pid, 'SIGKILL');\n");
  const { code, report } = doctorJson('--binary', crash);
  assert.equal(code, 1);
  assert.equal(report.load.ok, false);
  assert.match(
    report.load.errors[0],
    process.platform === 'win32'
      ? /^the process loading it died \(exit code/
      : /^the process loading it died \(killed by SIGKILL\)$/,
  );
});

test('doctor --binary on a module that loads but is not acp-native', (t) => {
  const other = join(tempDir(t), 'other.js');
  writeFileSync(other, 'module.exports = { hello: 1 };\n');
  const { code, report } = doctorJson('--binary', other);
  assert.equal(code, 1);
  assert.equal(report.load.ok, false);
  assert.match(report.load.errors[0], /exports no AgentConnection/);
});

test('doctor arguments', () => {
  assert.deepEqual(parseArgs(['doctor']), { command: 'doctor', options: {} });
  assert.deepEqual(parseArgs(['doctor', '--json', '--binary', 'x.node']), {
    command: 'doctor',
    options: { json: true, binary: 'x.node' },
  });
  assert.throws(() => parseArgs(['doctor', 'extra']), UsageError);
  assert.throws(() => parseArgs(['doctor', '--binary']), UsageError);
  assert.throws(() => parseArgs(['doctor', '--out', 'x']), UsageError);
  const { code, stderr } = (() => {
    const c = spawnSync(process.execPath, [CLI, 'doctor', 'extra'], { encoding: 'utf8' });
    return { code: c.status, stderr: c.stderr };
  })();
  assert.equal(code, 2);
  assert.match(stderr, /doctor takes no arguments/);
});

/** readelf's view of the version needs: `[{ file, versions }]`. */
function readelfNeeds(file) {
  const text = execFileSync('readelf', ['--version-info', '--wide', file], { encoding: 'utf8' });
  const needs = [];
  for (const line of text.slice(text.indexOf('Version needs section')).split('\n')) {
    const fileMatch = /File: (\S+)\s+Cnt:/.exec(line);
    if (fileMatch) needs.push({ file: fileMatch[1], versions: [] });
    const nameMatch = /Name: (\S+)\s+Flags:/.exec(line);
    if (nameMatch) needs.at(-1).versions.push(nameMatch[1]);
  }
  return needs;
}

test('the ELF reader agrees with readelf on the real build', {
  skip: !hasReadelf && 'needs Linux and readelf (binutils)',
}, () => {
  const binary = builtBinary();
  const needs = versionNeeds(readFileSync(binary));
  assert.deepEqual(needs, readelfNeeds(binary));
  assert.ok(
    needs.some((n) => n.file === 'libc.so.6'),
    JSON.stringify(needs),
  );
  const { report } = doctorJson();
  const [major, minor, patch] = highestGlibc(needs);
  assert.equal(report.binary.glibc.needs, `GLIBC_${major}.${minor}${patch ? `.${patch}` : ''}`);
});

test('the ELF reader gives ElfError, never a crash or hang, on corrupt input', {
  skip: process.platform !== 'linux' && 'the build here is not ELF',
}, () => {
  const original = readFileSync(builtBinary());
  const { sections } = sectionHeaders(original);
  // A musl build (Alpine in the release workflow) may have no version needs: then the headers are fuzzed alone.
  const verneed = sections.find((s) => s.type === SHT_GNU_VERNEED) ?? { offset: 0x40, size: 0x40 };
  if (isGlibcLinux)
    assert.ok(
      sections.some((s) => s.type === SHT_GNU_VERNEED),
      'a glibc build has a version-needs section',
    );
  // Deterministic xorshift: the same mutations every run.
  let seed = 0x9e3779b9;
  const random = (n) => {
    seed ^= seed << 13;
    seed ^= seed >>> 17;
    seed ^= seed << 5;
    return (seed >>> 0) % n;
  };
  // Mutate the version-needs records, the section header table and the ELF header.
  const shoff = Number(original.readBigUInt64LE(0x28));
  const regions = [
    [verneed.offset, verneed.size],
    [shoff, original.length - shoff],
    [0, 0x40],
  ];
  let errors = 0;
  // One copy, mutated and restored in place (the build is tens of MB).
  const buf = Buffer.from(original);
  for (let i = 0; i < 3000; i++) {
    const [start, size] = regions[i % regions.length];
    const touched = [];
    for (let k = 0; k < 1 + random(4); k++) {
      const at = start + random(size);
      touched.push(at);
      buf[at] = random(256);
    }
    try {
      const needs = versionNeeds(buf);
      assert.ok(Array.isArray(needs));
    } catch (err) {
      if (!(err instanceof ElfError)) throw new Error(`mutation ${i}: ${err.stack}`);
      errors++;
    }
    for (const at of touched) buf[at] = original[at];
  }
  assert.ok(errors > 0, 'some mutations are detected as corrupt');
  for (const length of [0, 3, 16, 0x40, verneed.offset + 8, shoff + 10]) {
    assert.throws(() => versionNeeds(original.subarray(0, length)), ElfError, `truncated to ${length}`);
  }
});
