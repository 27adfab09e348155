#!/usr/bin/env node
// Build this machine's binary the release way and pack the two packages a
// project installs until acp-native is published: the root package (JS,
// types, CLI) and the platform package holding the binary.
//
//   npm run pack:local                 # into local-packages/
//   node scripts/pack-local.mjs --out DIR [--debug]
//
// Then, in your project: npm install /path/to/local-packages/*.tgz
import { execFileSync } from 'node:child_process';
import { copyFileSync, cpSync, existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { glibcNeeded, newerThan, versionName } from './glibc-ceiling.mjs';
import { NOTICE_FILES } from './stage-notices.mjs';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const { TRIPLES, currentPlatform } = createRequire(import.meta.url)('../lib/loader.js');
const RELEASE_GLIBC = [2, 17];

const args = process.argv.slice(2);
const outAt = args.indexOf('--out');
const out = resolve(outAt >= 0 ? args[outAt + 1] : join(ROOT, 'local-packages'));
const debug = args.includes('--debug');

const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'));
const platform = currentPlatform();
const triple = TRIPLES[platform];
if (!triple) {
  console.error(
    `pack:local: acp-native has no binary package for ${platform}; supported: ${Object.keys(TRIPLES).join(', ')}`,
  );
  process.exit(1);
}
const nodeFile = `${pkg.napi.binaryName}.${platform}.node`;
const work = join(ROOT, '.cache', 'pack-local'); // inside the project: napi refuses output outside it
rmSync(work, { recursive: true, force: true });
mkdirSync(work, { recursive: true });
mkdirSync(out, { recursive: true });

const run = (command, argv, cwd = ROOT) =>
  execFileSync(command, argv, { cwd, stdio: ['ignore', 'pipe', 'inherit'], encoding: 'utf8' });

// Linux gnu: the release's glibc 2.17 toolchain (downloaded from npm by
// @napi-rs/cli on first use), so the binary loads where the release does.
const crossGlibc = platform.endsWith('-gnu') && (process.arch === 'x64' || process.arch === 'arm64');
const build = [
  '--no-install',
  'napi',
  'build',
  '--platform',
  '--target',
  triple,
  '--output-dir',
  join(work, 'artifacts'),
  '--no-js',
  '--dts',
  'unused.d.ts',
];
if (!debug) build.push('--release');
if (crossGlibc) build.push('--use-napi-cross');
console.log(
  `pack:local: ${debug ? 'debug' : 'release'} build for ${triple}${crossGlibc ? ' with the glibc 2.17 toolchain' : ''}…`,
);
execFileSync('npx', build, { cwd: ROOT, stdio: ['ignore', 'inherit', 'inherit'] });
const binary = join(work, 'artifacts', nodeFile);
if (!existsSync(binary)) {
  console.error(`pack:local: the build made no ${binary}`);
  process.exit(1);
}
if (platform.endsWith('-gnu')) {
  const needed = glibcNeeded(binary);
  if (newerThan(needed, RELEASE_GLIBC)) {
    console.error(
      `pack:local: ${nodeFile} needs ${versionName(needed)}; the release needs only GLIBC_${RELEASE_GLIBC.join('.')}`,
    );
    process.exit(1);
  }
  console.log(`pack:local: ${nodeFile} needs ${versionName(needed)} at most, like the release`);
}

// The platform package: its manifest from npm/<platform>/, the binary, the licenses.
const platformDir = join(work, 'npm', platform);
cpSync(join(ROOT, 'npm', platform), platformDir, { recursive: true });
copyFileSync(binary, join(platformDir, nodeFile));
for (const file of NOTICE_FILES) copyFileSync(join(ROOT, file), join(platformDir, file));

const pack = (dir) =>
  JSON.parse(run('npm', ['pack', '--json', '--ignore-scripts', '--pack-destination', out], dir))[0].filename;
const tarballs = [pack(ROOT), pack(platformDir)].map((name) => join(out, name));
rmSync(work, { recursive: true, force: true });

const shown = (file) => (relative(process.cwd(), file).startsWith('..') ? file : relative(process.cwd(), file));
console.log(`pack:local: made\n${tarballs.map((t) => `  ${shown(t)}`).join('\n')}`);
console.log(`pack:local: in your project: npm install ${tarballs.join(' ')}`);
