// `acp-native doctor`: which native binary this install would run, its
// SHA-256 (compare it with the table in the GitHub release notes), the glibc
// it needs and whether it loads. Meant for users checking an install and
// for bug reports; `--json` for machines, `--binary FILE` to check a file.
//
// The load runs in a child Node process: a binary that is corrupt or built
// for another system may crash the process that loads it, and the doctor
// must survive that to report it.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { closeSync, existsSync, openSync, readFileSync, readSync, realpathSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { jsonText } from './json-text.mjs';
import { glibcVersionName, highestGlibc, newerThan, versionNeeds } from './elf.mjs';

const { sanitizeForTerminal } = createRequire(import.meta.url)('../lib/sanitize.js');
const ROOT = fileURLToPath(new URL('..', import.meta.url));
/** Generous guard for the load check (a loader that hangs is a finding, not a hung doctor). */
const LOAD_TIMEOUT_MS = 60_000;
/** Files larger than this are hashed but not parsed (release binaries are a few MB; debug ones tens). */
const MAX_ELF_BYTES = 512 * 1024 * 1024;
/** Bound on the load errors we report (the loader lists one per place it tried). */
const MAX_ERRORS = 8;

/** Loads `argv[1]` (a .node file, or through lib/loader.js) and prints what happened as JSON. */
const LOAD_SCRIPT = `
const target = process.argv[1];
const before = new Set(Object.keys(require.cache));
const messages = (err) => {
  const out = [];
  if (Array.isArray(err && err.tried)) {
    // The loader's ERR_ACP_NATIVE_BINDING: each place it looked, and why.
    return [String(err.message).split('\\n')[0], ...err.tried.slice(0, ${MAX_ERRORS}).map((t) => t.where + ': ' + t.reason)];
  }
  for (let e = err; e && out.length < ${MAX_ERRORS}; e = e.cause) {
    // First lines only: Node appends a require stack that means nothing to the user.
    if (Array.isArray(e)) { out.push(...e.slice(0, ${MAX_ERRORS}).map((x) => String(x && x.message || x).split('\\n')[0])); break; }
    out.push(String(e.message || e).split('\\n')[0]);
  }
  return out;
};
let m;
try {
  m = target.endsWith('loader.js') ? require(require(target).loadNativeBinding()) : require(target);
} catch (err) {
  process.stdout.write(JSON.stringify({ ok: false, errors: messages(err) }));
  process.exit(0);
}
const loaded = Object.keys(require.cache).filter((k) => k.endsWith('.node') && !before.has(k));
const exports = Object.keys(m).sort();
process.stdout.write(JSON.stringify({ ok: typeof m.AgentConnection === 'function', path: loaded[0] || null, exports,
  errors: typeof m.AgentConnection === 'function' ? [] : ['the module loaded but exports no AgentConnection: not an acp-native binary'] }));
`;

/** glibc version string of this process, 'musl', or null off Linux. */
function libc() {
  if (process.platform !== 'linux') return null;
  // The network part of the report can block on DNS.
  if (process.report) process.report.excludeNetwork = true;
  const report = process.report?.getReport?.();
  const glibc = report?.header?.glibcVersionRuntime;
  if (glibc) return { family: 'glibc', version: glibc };
  const musl = report?.sharedObjects?.some((f) => f.includes('libc.musl-') || f.includes('ld-musl-'));
  return { family: musl ? 'musl' : 'unknown', version: null };
}

/** The suffix napi-rs gives this platform's binary and package (`linux-x64-gnu`, `darwin-arm64`, …). */
function platformSuffix(libcInfo) {
  const { platform, arch } = process;
  if (platform === 'linux') return `linux-${arch}-${libcInfo?.family === 'musl' ? 'musl' : 'gnu'}`;
  if (platform === 'win32') return `win32-${arch}-msvc`;
  return `${platform}-${arch}`;
}

/** Where lib/loader.js would load the binary from, checked in its order. */
function expectedBinary(binaryName, packageName) {
  const file = `${binaryName}.${packageName.slice(binaryName.length + 1)}.node`;
  const local = join(ROOT, file);
  if (existsSync(local)) return { path: local, source: 'local build next to the package' };
  try {
    const requireHere = createRequire(join(ROOT, 'lib', 'loader.js'));
    return {
      path: join(dirname(requireHere.resolve(`${packageName}/package.json`)), file),
      source: `package ${packageName}`,
    };
  } catch {
    return { path: null, source: null };
  }
}

/** `file` with symlinks resolved (Node's loader reports real paths), or as given if that fails. */
function realPath(file) {
  try {
    return realpathSync(file);
  } catch {
    return file;
  }
}

/**
 * SHA-256 of the file, read in chunks; `head` is the whole content when it
 * is small enough for the ELF reader (any real binary is), else null.
 */
function hashFile(file, size) {
  const hash = createHash('sha256');
  const whole = size <= MAX_ELF_BYTES ? Buffer.alloc(size) : null;
  const chunk = Buffer.alloc(1024 * 1024);
  const fd = openSync(file, 'r');
  try {
    let offset = 0;
    for (let n; (n = readSync(fd, chunk, 0, chunk.length, null)) > 0; offset += n) {
      hash.update(chunk.subarray(0, n));
      if (whole && offset + n <= size) chunk.copy(whole, offset, 0, n);
    }
    // A file that changed size while read is hashed as read; the ELF view only if it is complete.
    return { sha256: hash.digest('hex'), head: whole && offset === size ? whole : null };
  } finally {
    closeSync(fd);
  }
}

/** True when `bytes` start with the ELF magic (a Linux binary). */
const looksLikeElf = (bytes) => bytes.length >= 4 && bytes.readUInt32BE(0) === 0x7f454c46;

/** The glibc symbol versions the binary needs, checked against this system's glibc; null off Linux for non-ELF files. */
function glibcNeeds(bytes, libcInfo) {
  if (process.platform !== 'linux' && !looksLikeElf(bytes)) return null;
  try {
    const needed = highestGlibc(versionNeeds(bytes));
    if (!needed) return { needs: null, ok: true, note: 'needs no glibc symbol versions (a musl or static build)' };
    const name = glibcVersionName(needed);
    if (libcInfo?.family !== 'glibc')
      return {
        needs: name,
        ok: false,
        note: `a glibc build, but this system's libc is ${libcInfo?.family ?? 'not glibc'}`,
      };
    const runtime = libcInfo.version.split('.').map(Number);
    const ok = !newerThan(needed, runtime);
    return {
      needs: name,
      ok,
      note: ok ? `this system has ${libcInfo.version}` : `this system has only ${libcInfo.version}`,
    };
  } catch (err) {
    return { needs: null, ok: false, error: err.message };
  }
}

/** Load `target` in a child Node process; `{ ok, path, exports, errors }`. */
function tryLoad(target) {
  const child = spawnSync(process.execPath, ['-e', LOAD_SCRIPT, target], {
    encoding: 'utf8',
    // Paths are absolute; a crash's core file (if enabled) lands outside the user's project.
    cwd: tmpdir(),
    timeout: LOAD_TIMEOUT_MS,
    maxBuffer: 1024 * 1024,
  });
  if (child.error?.code === 'ETIMEDOUT')
    return { ok: false, errors: [`loading it did not finish within ${LOAD_TIMEOUT_MS / 1000} s`] };
  if (child.error) return { ok: false, errors: [`could not run the load check: ${child.error.message}`] };
  try {
    return JSON.parse(child.stdout);
  } catch {
    // A signal (SIGSEGV, SIGBUS from a truncated file) leaves at most a native stack on stderr: noise.
    if (child.signal) return { ok: false, errors: [`the process loading it died (killed by ${child.signal})`] };
    const last = child.stderr.trim().split('\n').at(-1);
    return { ok: false, errors: [`the process loading it died (exit code ${child.status})${last ? `: ${last}` : ''}`] };
  }
}

/**
 * Everything the doctor knows, as a plain object (what `--json` prints).
 * @param {{ binary?: string }} options `binary`: check this file instead of the one the package would load
 */
export function diagnose({ binary } = {}) {
  const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'));
  const binaryName = pkg.napi?.binaryName ?? pkg.name;
  const libcInfo = libc();
  const suffix = platformSuffix(libcInfo);
  const packageName = `${pkg.name}-${suffix}`;
  const { TRIPLES } = createRequire(import.meta.url)('../lib/loader.js');
  const supported = Object.hasOwn(TRIPLES, suffix);

  const expected = binary ? { path: resolve(binary), source: '--binary' } : expectedBinary(binaryName, packageName);
  // Through lib/loader.js (the real loader) unless a file was named.
  const load = tryLoad(binary ? resolve(binary) : join(ROOT, 'lib', 'loader.js'));
  // The file named, or else the one the loader really loaded (the expected one if it failed).
  const path = binary || !(load.ok && load.path) ? expected.path : load.path;
  const problems = [];
  if (!supported) problems.push(`no prebuilt binary for ${suffix} (supported: ${Object.keys(TRIPLES).join(', ')})`);
  if (load.ok && expected.path && load.path && realPath(load.path) !== realPath(expected.path)) {
    problems.push(`loaded ${load.path}, expected ${expected.path}`);
  }

  let file = null;
  const stat = path ? statSync(path, { throwIfNoEntry: false }) : undefined;
  if (stat?.isFile()) {
    const { sha256, head } = hashFile(path, stat.size);
    const glibc = head
      ? glibcNeeds(head, libcInfo)
      : { needs: null, ok: false, error: `larger than ${MAX_ELF_BYTES} bytes: not read` };
    if (glibc && !glibc.ok)
      problems.push(glibc.error ? `cannot read ${path}: ${glibc.error}` : `needs ${glibc.needs}: ${glibc.note}`);
    const source = realPath(path) === realPath(expected.path) ? expected.source : 'what the loader loaded';
    file = { path, source, bytes: stat.size, sha256, glibc };
  } else if (stat) {
    problems.push(`${path} is not a regular file`);
  } else if (path) {
    problems.push(`no file at ${path}`);
  } else {
    problems.push(`${packageName} is not installed (reinstall without --no-optional / --omit=optional)`);
  }
  if (!load.ok) problems.push(`does not load: ${load.errors.join('; ')}`);

  return {
    version: pkg.version,
    node: process.version,
    napi: process.versions.napi ?? null,
    platform: process.platform,
    arch: process.arch,
    libc: libcInfo,
    package: { name: packageName, supported },
    binary: file,
    load: { ok: load.ok, errors: load.errors ?? [] },
    problems,
  };
}

/** The report for people. */
export function formatReport(d) {
  const row = (label, value) => `  ${label.padEnd(12)} ${value}\n`;
  const libcText = d.libc ? ` ${d.libc.family}${d.libc.version ? ` ${d.libc.version}` : ''}` : '';
  let out = `acp-native ${d.version} doctor\n`;
  out += row('platform', `${d.platform} ${d.arch}${libcText}`);
  out += row('node', `${d.node} (N-API ${d.napi ?? '?'})`);
  out += row('package', `${d.package.name}${d.package.supported ? '' : ' (no such prebuilt package)'}`);
  if (d.binary) {
    out += row('binary', d.binary.path);
    out += row('from', d.binary.source ?? '?');
    out += row('size', `${d.binary.bytes} bytes`);
    out += row('sha256', d.binary.sha256);
    const g = d.binary.glibc;
    if (g)
      out += row('glibc', g.error ? `unreadable: ${g.error}` : `${g.needs ?? 'none'}${g.note ? ` (${g.note})` : ''}`);
  } else {
    out += row('binary', 'not found');
  }
  out += row('loads', d.load.ok ? 'yes' : 'NO');
  for (const p of d.problems) out += `  problem:     ${p}\n`;
  if (d.binary) {
    out += `\nA published binary's SHA-256 is listed in the GitHub release notes of v${d.version}.\n`;
  }
  return out;
}

/** `acp-native doctor [--json] [--binary FILE]`: exit 0 when the binary loads, 1 otherwise. */
export function runDoctor({ json = false, binary } = {}) {
  const d = diagnose({ binary });
  // Paths and loader messages are shown as text, whatever they contain.
  process.stdout.write(json ? `${jsonText(d)}\n` : sanitizeForTerminal(formatReport(d)));
  return d.load.ok ? 0 : 1;
}
