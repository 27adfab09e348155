#!/usr/bin/env node
// Build the extension for one VS Code target: bundle src/extension.mjs into
// dist/extension.js (esbuild or webpack), copy that target's acp-native
// binary and the mock agent next to it.
//
//   node build.mjs --target linux-x64 [--bundler esbuild|webpack] [--binary FILE]
//
// The binary comes from --binary, else the installed platform package
// (`npm install --os=darwin --cpu=arm64 acp-native-darwin-arm64` fetches
// another target's), else a local build of acp-native. Its header must say
// it is for the target, whatever file it came from.
import { copyFileSync, existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { TARGETS, binaryPlatform } from './targets.mjs';

const HERE = dirname(fileURLToPath(import.meta.url));
const require = createRequire(import.meta.url);
// This repository's acp-native (the example builds against the source tree).
const ACP_NATIVE = resolve(process.env.ACP_NATIVE_DIR ?? join(HERE, '..', '..'));

export class BuildError extends Error {}

/** The target's binary, checked against the target; returns its path. */
export function findBinary(target, explicit) {
  const platform = TARGETS[target];
  if (!platform) throw new BuildError(`unknown target ${target}; one of ${Object.keys(TARGETS).join(', ')}`);
  const name = `acp-native.${platform}.node`;
  const candidates = [];
  if (explicit) candidates.push(resolve(explicit));
  else {
    try {
      candidates.push(join(dirname(require.resolve(`acp-native-${platform}/package.json`, { paths: [HERE] })), name));
    } catch {}
    candidates.push(join(ACP_NATIVE, name));
  }
  const file = candidates.find((f) => existsSync(f));
  if (!file) {
    throw new BuildError(
      `no ${name} for ${target}: looked at ${candidates.join(', ')}. Install acp-native-${platform} for that platform ` +
        `(npm install --no-save --force --os=… --cpu=… acp-native-${platform}) or pass --binary FILE (e.g. the release artifact)`,
    );
  }
  const actual = binaryPlatform(readFileSync(file));
  if (actual !== platform) {
    throw new BuildError(
      `${file} is a ${actual} binary, not ${platform}: refusing to build a ${target} extension with it`,
    );
  }
  return { file, name, platform };
}

async function bundleEsbuild(binary) {
  const esbuild = await import('esbuild');
  const result = await esbuild.build({
    entryPoints: [join(HERE, 'src', 'extension.mjs')],
    outfile: join(HERE, 'dist', 'extension.js'),
    bundle: true,
    platform: 'node',
    format: 'cjs',
    target: 'node18',
    external: ['vscode'],
    // In this repository `acp-native` is the repository itself.
    alias: { 'acp-native': ACP_NATIVE },
    define: { ACP_NATIVE_BINARY: JSON.stringify(binary) },
    logLevel: 'silent',
  });
  return { warnings: result.warnings.map((w) => w.text), errors: result.errors.map((e) => e.text) };
}

async function bundleWebpack(binary) {
  const webpack = (await import('webpack')).default;
  const config = require('./webpack.config.js')({ binary, acpNative: ACP_NATIVE });
  const stats = await new Promise((done, fail) => webpack(config, (err, s) => (err ? fail(err) : done(s))));
  const json = stats.toJson({ all: false, warnings: true, errors: true });
  return { warnings: json.warnings.map((w) => w.message), errors: json.errors.map((e) => e.message) };
}

/** Build dist/ for `target`; returns { binary, warnings, errors }. */
export async function build({ target, bundler = 'esbuild', binary: explicit }) {
  const binary = findBinary(target, explicit);
  const dist = join(HERE, 'dist');
  rmSync(dist, { recursive: true, force: true });
  mkdirSync(dist);
  const bundle = bundler === 'webpack' ? bundleWebpack : bundler === 'esbuild' ? bundleEsbuild : null;
  if (!bundle) throw new BuildError(`unknown bundler ${bundler}`);
  const report = await bundle(binary.name);
  if (report.errors.length) throw new BuildError(`${bundler} failed:\n${report.errors.join('\n')}`);
  copyFileSync(binary.file, join(dist, binary.name));
  copyFileSync(join(ACP_NATIVE, 'mock-agent', 'agent.mjs'), join(dist, 'mock-agent.mjs'));
  return { binary, ...report };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { values } = parseArgs({
    options: { target: { type: 'string' }, bundler: { type: 'string' }, binary: { type: 'string' } },
  });
  try {
    if (!values.target) throw new BuildError('--target is required');
    const { binary, warnings } = await build(values);
    for (const w of warnings) console.warn(`warning: ${w}`);
    console.log(
      `built dist/ for ${values.target} with ${values.bundler ?? 'esbuild'} (${binary.name} from ${binary.file})`,
    );
  } catch (err) {
    if (!(err instanceof BuildError)) throw err;
    console.error(`build: ${err.message}`);
    process.exit(1);
  }
}
