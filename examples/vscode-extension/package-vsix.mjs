#!/usr/bin/env node
// Build and package one VSIX per VS Code target, and check that the VSIX
// carries exactly that target's acp-native binary (vsce itself would ship
// whatever binary is at hand, e.g. the Linux one in a darwin-arm64 VSIX).
//
//   node package-vsix.mjs --target linux-x64 [--bundler esbuild|webpack] [--binary FILE] [--out FILE]
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { build, BuildError } from './build.mjs';
import { binaryPlatform } from './targets.mjs';
import { readZip } from './zip.mjs';

const HERE = dirname(fileURLToPath(import.meta.url));
const require = createRequire(import.meta.url);

/** Fail unless the VSIX at `vsix` holds exactly `binary` (same bytes, right platform) as its only .node. */
export function checkVsix(vsix, binary) {
  const entries = readZip(vsix);
  const natives = [...entries.keys()].filter((name) => name.endsWith('.node'));
  const expected = `extension/dist/${binary.name}`;
  if (natives.length !== 1 || natives[0] !== expected) {
    throw new BuildError(
      `${vsix} must hold exactly ${expected}, holds: ${natives.join(', ') || 'no .node file'} (check .vscodeignore)`,
    );
  }
  const shipped = entries.get(expected);
  const platform = binaryPlatform(shipped);
  if (platform !== binary.platform) throw new BuildError(`${vsix} ships a ${platform} binary, not ${binary.platform}`);
  if (!shipped.equals(readFileSync(binary.file)))
    throw new BuildError(`${vsix}: ${expected} differs from ${binary.file}`);
  for (const needed of ['extension/dist/extension.js', 'extension/package.json']) {
    if (!entries.has(needed)) throw new BuildError(`${vsix} lacks ${needed}`);
  }
  return [...entries.keys()];
}

export async function packageVsix({ target, bundler, binary: explicit, out }) {
  const built = await build({ target, bundler, binary: explicit });
  const manifest = JSON.parse(readFileSync(join(HERE, 'package.json'), 'utf8'));
  const vsix = resolve(out ?? join(HERE, `${manifest.name}-${target}-${manifest.version}.vsix`));
  const vsce = join(dirname(require.resolve('@vscode/vsce/package.json')), 'vsce');
  // --no-dependencies: everything the extension needs is in dist/.
  execFileSync(
    process.execPath,
    [vsce, 'package', '--target', target, '--no-dependencies', '--skip-license', '--out', vsix],
    {
      cwd: HERE,
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  const files = checkVsix(vsix, built.binary);
  return { vsix, files, ...built };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { values } = parseArgs({
    options: {
      target: { type: 'string' },
      bundler: { type: 'string' },
      binary: { type: 'string' },
      out: { type: 'string' },
    },
  });
  try {
    if (!values.target) throw new BuildError('--target is required');
    const { vsix, binary } = await packageVsix(values);
    console.log(`${vsix}: ${values.target}, ships ${binary.name} (${binary.platform}, checked)`);
  } catch (err) {
    if (!(err instanceof BuildError)) throw err;
    console.error(`package-vsix: ${err.message}`);
    process.exit(1);
  }
}
