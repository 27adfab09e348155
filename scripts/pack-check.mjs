#!/usr/bin/env node
// Packaging check (run by .ci/run and the release workflow): build the
// linux-x64-gnu binary the release way, check what it needs from glibc,
// pack the root and platform packages as the release publishes them (the
// root with the optionalDependencies `napi pre-publish` adds, the platform
// package with LICENSE and notices), run `npm publish --dry-run`, publint
// and arethetypeswrong on them, install both tarballs offline into a fresh
// directory, and use the package from there (require, import, a session
// against the mock agent, `npx acp-native chat`, `npx acp-native doctor`
// finding the installed binary and its SHA-256).
//
//   node scripts/pack-check.mjs                  # build, then check
//   node scripts/pack-check.mjs --prebuilt FILE  # check an already built .node
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  realpathSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { glibcNeeded, newerThan, versionName } from './glibc-ceiling.mjs';
import { NOTICE_FILES, stageNotices } from './stage-notices.mjs';
import { platformPackages } from './platform-packages.mjs';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const TARGET = 'x86_64-unknown-linux-gnu';
const PLATFORM = 'linux-x64-gnu';
const MAX_GLIBC = [2, 17];
const WORK = join(ROOT, '.cache', 'pack-check'); // inside the project: napi refuses npm dirs outside it
const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'));
const NODE_FILE = `${pkg.napi.binaryName}.${PLATFORM}.node`;
const MOCK_AGENT = join(ROOT, 'mock-agent', 'agent.mjs');

class CheckFailed extends Error {}
const fail = (message) => {
  throw new CheckFailed(message);
};

function step(name, fn) {
  const started = Date.now();
  process.stdout.write(`pack-check: ${name}…\n`);
  const result = fn();
  process.stdout.write(`pack-check: ${name}: ok (${((Date.now() - started) / 1000).toFixed(1)} s)\n`);
  return result;
}

function run(command, args, { cwd = ROOT, input, env } = {}) {
  try {
    return execFileSync(command, args, {
      cwd,
      input,
      env: env ?? process.env,
      encoding: 'utf8',
      stdio: [input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
      maxBuffer: 64 * 1024 * 1024,
    });
  } catch (err) {
    fail(`\`${command} ${args.join(' ')}\` failed (exit ${err.status}):\n${err.stdout ?? ''}${err.stderr ?? ''}`);
  }
}

/** The release build, as the workflow does it: glibc 2.17 cross toolchain from npm. */
function buildRelease(artifacts) {
  run('npx', [
    '--no-install',
    'napi',
    'build',
    '--platform',
    '--release',
    '--use-napi-cross',
    '--target',
    TARGET,
    '--output-dir',
    artifacts,
    '--no-js',
    '--dts',
    'unused.d.ts',
  ]);
  return join(artifacts, NODE_FILE);
}

/** Paths inside the tarball `npm pack` would make in `dir`. */
function packedFiles(dir) {
  const [report] = JSON.parse(run('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: dir }));
  return report.files.map((f) => f.path).sort();
}

function assertSameFiles(what, actual, expected) {
  const stray = actual.filter((f) => !expected.includes(f));
  const missing = expected.filter((f) => !actual.includes(f));
  if (stray.length || missing.length) {
    const problems = [];
    if (stray.length) problems.push(`ships files nobody listed: ${stray.join(', ')}`);
    if (missing.length) problems.push(`lacks: ${missing.join(', ')}`);
    fail(`${what}: ${problems.join('; ')} (package.json "files" lists every shipped file exactly)`);
  }
}

function pack(dir, into) {
  const [report] = JSON.parse(
    run('npm', ['pack', '--json', '--ignore-scripts', '--pack-destination', into], { cwd: dir }),
  );
  return join(into, report.filename);
}

/** What `napi pre-publish` adds to the root package.json: every target's package at the root version. */
function publishedOptionalDependencies() {
  return platformPackages(pkg);
}

/** The root package as the release publishes it: ROOT's tarball, plus the optionalDependencies. */
function packPublishedRoot(stage, into) {
  const raw = join(stage, 'root-raw');
  mkdirSync(raw, { recursive: true });
  const tgz = pack(ROOT, raw);
  run('tar', ['xzf', tgz, '-C', raw]);
  const dir = join(raw, 'package');
  const manifest = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));
  manifest.optionalDependencies = publishedOptionalDependencies();
  writeFileSync(join(dir, 'package.json'), JSON.stringify(manifest, null, 2) + '\n');
  return { dir, tgz: pack(dir, into) };
}

/** `npm publish --dry-run`, publint and (for a package with types) arethetypeswrong; any error fails. */
function lintForPublish(what, dir, tgz, { types }) {
  run('npm', ['publish', '--dry-run', '--ignore-scripts', '--tag', 'pack-check'], { cwd: dir });
  const bin = (name) => join(ROOT, 'node_modules', '.bin', name);
  // --strict: publint's warnings are errors too.
  run(bin('publint'), ['run', '--strict', tgz]);
  if (types) {
    // Exit status 1 on any problem (masquerading CJS/ESM, missing or untyped resolution, …).
    run(bin('attw'), [tgz, '--format', 'ascii', '--no-color']);
  }
  process.stdout.write(`pack-check: ${what}: npm publish --dry-run, publint${types ? ', attw' : ''}: no errors\n`);
}

const SESSION_SCRIPT = `
import { AcpClient, PROTOCOL_VERSION } from 'acp-native';
import { createRequire } from 'node:module';
const require = createRequire(import.meta.url);
if (require('acp-native').AcpClient !== AcpClient) throw new Error('require and import give different AcpClient objects');
if (PROTOCOL_VERSION !== 1) throw new Error('PROTOCOL_VERSION ' + PROTOCOL_VERSION);
const updates = [];
const client = await AcpClient.connect({
  command: process.execPath,
  args: [process.argv[2]],
  onSessionUpdate: ({ update }) => updates.push(update),
  handlers: { 'session/request_permission': () => ({ outcome: { outcome: 'selected', optionId: 'allow_once' } }) },
});
const { sessionId } = await client.newSession();
const { stopReason } = await client.prompt({ sessionId, prompt: 'say:from_the_tarball tool permission' });
const exit = await client.close();
const text = updates.filter((u) => u.sessionUpdate === 'agent_message_chunk').map((u) => u.content.text).join('|');
console.log(JSON.stringify({ stopReason, text, exitCode: exit.exitCode, kinds: updates.map((u) => u.sessionUpdate) }));
`;

function main() {
  const args = process.argv.slice(2);
  const prebuiltAt = args.indexOf('--prebuilt');
  if (process.platform !== 'linux' || process.arch !== 'x64')
    fail(`runs on linux x64 only (this is ${process.platform}-${process.arch})`);

  rmSync(WORK, { recursive: true, force: true });
  const artifacts = join(WORK, 'artifacts');
  const tarballs = join(WORK, 'tarballs');
  mkdirSync(artifacts, { recursive: true });
  mkdirSync(tarballs, { recursive: true });

  const built =
    prebuiltAt >= 0
      ? resolve(args[prebuiltAt + 1] ?? fail('--prebuilt needs a file'))
      : step(`release build for ${TARGET} (napi build --release --use-napi-cross)`, () => buildRelease(artifacts));
  if (!existsSync(built)) fail(`no binary at ${built}`);
  if (prebuiltAt >= 0) cpSync(built, join(artifacts, NODE_FILE));
  const size = statSync(built).size;
  process.stdout.write(`pack-check: ${NODE_FILE}: ${size} bytes (${(size / 1024 / 1024).toFixed(2)} MiB)\n`);

  step(`glibc symbol versions ≤ ${MAX_GLIBC.join('.')}`, () => {
    let needed;
    try {
      needed = glibcNeeded(built);
    } catch (err) {
      fail(err.message);
    }
    process.stdout.write(`pack-check: needs ${versionName(needed)} at most\n`);
    if (newerThan(needed, MAX_GLIBC))
      fail(`${built} needs ${versionName(needed)}, newer than ${MAX_GLIBC.join('.')}: build it with --use-napi-cross`);
  });

  // The publish job's layout: npm/<platform>/ packages, filled by `napi
  // artifacts`. It runs in a staging copy of the project because it also
  // writes the binary next to package.json (it would replace the debug
  // build), and is told about this one target only (it insists on a binary
  // for every configured target).
  const stage = join(WORK, 'stage');
  const npmDir = join(stage, 'npm');
  step('napi artifacts into a staging copy of npm/', () => {
    cpSync(join(ROOT, 'npm'), npmDir, { recursive: true });
    writeFileSync(
      join(stage, 'package.json'),
      JSON.stringify({ ...pkg, napi: { ...pkg.napi, targets: [TARGET] } }, null, 2),
    );
    run('npx', ['--no-install', 'napi', 'artifacts', '--cwd', stage, '--output-dir', artifacts, '--npm-dir', npmDir]);
    stageNotices(npmDir);
  });
  const platformDir = join(npmDir, PLATFORM);

  step('package contents', () => {
    assertSameFiles('the root package', packedFiles(ROOT), [...pkg.files, 'package.json', 'README.md'].sort());
    for (const file of ['LICENSE', 'THIRD_PARTY_NOTICES.md'])
      if (!pkg.files.includes(file)) fail(`the root package does not ship ${file}`);
    assertSameFiles(
      `the ${PLATFORM} package`,
      packedFiles(platformDir),
      ['README.md', NODE_FILE, 'package.json', ...NOTICE_FILES].sort(),
    );
    const platformPkg = JSON.parse(readFileSync(join(platformDir, 'package.json'), 'utf8'));
    if (publishedOptionalDependencies()[platformPkg.name] !== pkg.version)
      fail(`the published optionalDependencies would lack ${platformPkg.name}@${pkg.version}`);
    if (JSON.stringify(platformPkg.engines) !== JSON.stringify(pkg.engines))
      fail('engines differ between the root and platform packages');
  });

  const [root, platformTgz] = step('npm pack (the root with the optionalDependencies napi pre-publish adds)', () => [
    packPublishedRoot(stage, tarballs),
    pack(platformDir, tarballs),
  ]);
  const rootTgz = root.tgz;

  step('npm publish --dry-run, publint, arethetypeswrong', () => {
    lintForPublish('the root package', root.dir, rootTgz, { types: true });
    lintForPublish(`the ${PLATFORM} package`, platformDir, platformTgz, { types: false });
  });

  const app = mkdtempSync(join(tmpdir(), 'acp-native-pack-check-'));
  try {
    // The runtime dependencies (the agent manager's archive parsers) come from
    // the registry like any user's install: fetched into npm's cache first
    // (`npm ci` caches their tarballs but not the metadata an install needs),
    // so the install below stays offline and never asks the registry about
    // acp-native's own (unpublished) platform packages.
    step('the runtime dependencies in the npm cache', () => {
      const specs = Object.entries(pkg.dependencies ?? {}).map(([name, version]) => `${name}@${version}`);
      if (specs.length === 0) return;
      const scratch = mkdtempSync(join(tmpdir(), 'acp-native-pack-deps-'));
      try {
        writeFileSync(
          join(scratch, 'package.json'),
          JSON.stringify({ name: 'pack-check-deps', version: '1.0.0', private: true }),
        );
        run('npm', ['install', '--prefer-offline', '--ignore-scripts', '--no-audit', '--no-fund', ...specs], {
          cwd: scratch,
        });
      } finally {
        rmSync(scratch, { recursive: true, force: true });
      }
    });
    step('offline install of both tarballs into a fresh directory', () => {
      writeFileSync(
        join(app, 'package.json'),
        JSON.stringify({ name: 'pack-check-app', version: '1.0.0', private: true }),
      );
      run('npm', ['install', '--offline', '--no-audit', '--no-fund', rootTgz, platformTgz], { cwd: app });
      const installed = join(app, 'node_modules', 'acp-native');
      if (existsSync(join(installed, NODE_FILE))) fail('the root package carries a .node of its own');
      if (!existsSync(join(app, 'node_modules', `acp-native-${PLATFORM}`, NODE_FILE)))
        fail('the platform package was not installed');
    });

    step('require() from the install', () => {
      const out = run(
        process.execPath,
        [
          '-e',
          `
        const m = require('acp-native');
        const bin = require.resolve('acp-native-${PLATFORM}');
        console.log(JSON.stringify({ exports: Object.keys(m).sort(), protocol: m.PROTOCOL_VERSION, bin }));`,
        ],
        { cwd: app },
      );
      const seen = JSON.parse(out);
      for (const name of ['AcpClient', 'AcpError', 'RpcError', 'PROTOCOL_VERSION']) {
        if (!seen.exports.includes(name)) fail(`require('acp-native') lacks ${name}: ${seen.exports}`);
      }
      if (seen.protocol !== 1) fail(`PROTOCOL_VERSION is ${seen.protocol}`);
    });

    step('import and a session against the mock agent', () => {
      writeFileSync(join(app, 'session.mjs'), SESSION_SCRIPT);
      const result = JSON.parse(
        run(process.execPath, ['session.mjs', MOCK_AGENT], { cwd: app }).trim().split('\n').at(-1),
      );
      if (
        result.stopReason !== 'end_turn' ||
        !result.text.startsWith('from the tarball|') ||
        !result.text.includes('"optionId":"allow_once"')
      ) {
        fail(`unexpected session: ${JSON.stringify(result)}`);
      }
      if (!result.kinds.includes('tool_call') || result.exitCode !== 0)
        fail(`unexpected session: ${JSON.stringify(result)}`);
    });

    step('npx acp-native chat from the install', () => {
      const version = run('npx', ['--offline', '--no-install', 'acp-native', '--version'], { cwd: app }).trim();
      if (version !== pkg.version) fail(`acp-native --version printed ${version}`);
      const out = run('npx', ['--offline', '--no-install', 'acp-native', 'chat', '--', process.execPath, MOCK_AGENT], {
        cwd: app,
        input: 'say:hello_from_npx plan\n',
      });
      if (!/^hello from npx$/m.test(out) || !/\[turn ended: end_turn\]/.test(out) || !/Plan:/.test(out))
        fail(`unexpected chat output:\n${out}`);
    });

    step('npx acp-native doctor from the install', () => {
      const report = JSON.parse(
        run('npx', ['--offline', '--no-install', 'acp-native', 'doctor', '--json'], { cwd: app }),
      );
      const expected = join(app, 'node_modules', `acp-native-${PLATFORM}`, NODE_FILE);
      const sha256 = createHash('sha256').update(readFileSync(built)).digest('hex');
      if (report.binary?.path !== realpathSync(expected))
        fail(`doctor resolved ${report.binary?.path}, expected ${expected}`);
      if (report.binary.source !== `package acp-native-${PLATFORM}`)
        fail(`doctor says the binary comes from ${report.binary.source}`);
      if (report.binary.sha256 !== sha256)
        fail(`doctor printed SHA-256 ${report.binary.sha256}, the built file has ${sha256}`);
      if (!report.load.ok || report.problems.length) fail(`doctor found problems: ${JSON.stringify(report.problems)}`);
      if (report.binary.glibc?.needs !== versionName(glibcNeeded(built)))
        fail(`doctor says the binary needs ${report.binary.glibc?.needs}`);
    });
  } finally {
    rmSync(app, { recursive: true, force: true });
  }
  process.stdout.write(`pack-check: all checks passed (${NODE_FILE} ${size} bytes)\n`);
}

try {
  main();
} catch (err) {
  if (!(err instanceof CheckFailed)) throw err;
  process.stderr.write(`pack-check: FAILED: ${err.message}\n`);
  process.exit(1);
}
