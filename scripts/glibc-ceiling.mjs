#!/usr/bin/env node
// The newest glibc a Linux binary needs, read from its ELF version-needs
// section (cli/elf.mjs: plain JS, any architecture's ELF, no binutils).
//
//   node scripts/glibc-ceiling.mjs FILE [MAX]   # exit 1 if FILE needs a glibc newer than MAX (default 2.17)
//   node scripts/glibc-ceiling.mjs --warn-local-build
//     after `npm run build` (postbuild): on Linux gnu, warn loudly when the
//     binary next to package.json needs a newer glibc than the release.
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { basename } from 'node:path';
import { fileURLToPath } from 'node:url';
import { glibcVersionName, highestGlibc, newerThan, versionNeeds } from '../cli/elf.mjs';

/** `[major, minor, patch]` of the highest GLIBC_* version `file` requires. */
export function glibcNeeded(file) {
  let needed;
  try {
    needed = highestGlibc(versionNeeds(readFileSync(file)));
  } catch (err) {
    throw new Error(`cannot read the symbol versions of ${file}: ${err.message}`);
  }
  if (!needed) throw new Error(`${file} lists no GLIBC symbol versions: is it a glibc binary?`);
  return needed;
}

export { newerThan };
export const versionName = glibcVersionName;

/** A warning when the local build needs a newer glibc than `max`, else null. */
export function localBuildWarning(file, max = [2, 17]) {
  const needed = glibcNeeded(file);
  if (!newerThan(needed, max)) return null;
  const rule = '!'.repeat(72);
  return [
    rule,
    `! ${basename(file)} needs ${versionName(needed)}: it loads only on systems with`,
    `! glibc ${needed.slice(0, 2).join('.')} or newer. The release needs only GLIBC_${max.join('.')}.`,
    '! Fine for this machine; to build one that loads where the release does:',
    '!   npm run build -- --use-napi-cross      (the binary, next to package.json)',
    '!   npm run pack:local                     (the two packages to install)',
    rule,
  ].join('\n');
}

if (process.argv[1] === fileURLToPath(import.meta.url) && process.argv[2] === '--warn-local-build') {
  const { currentPlatform } = createRequire(import.meta.url)('../lib/loader.js');
  const platform = currentPlatform();
  const file = fileURLToPath(new URL(`../acp-native.${platform}.node`, import.meta.url));
  try {
    const warning = platform.endsWith('-gnu') && existsSync(file) ? localBuildWarning(file) : null;
    if (warning) process.stderr.write(`${warning}\n`);
  } catch (err) {
    // A warning, never a failed build.
    process.stderr.write(`glibc check of ${file} skipped: ${err.message}\n`);
  }
} else if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const [file, max = '2.17'] = process.argv.slice(2);
  if (!file) {
    process.stderr.write('usage: glibc-ceiling.mjs FILE [MAX]\n');
    process.exit(2);
  }
  const ceiling = max.split('.').map(Number);
  try {
    const needed = glibcNeeded(file);
    process.stdout.write(`${file} needs ${versionName(needed)} at most\n`);
    if (newerThan(needed, ceiling)) {
      process.stderr.write(`${file} needs ${versionName(needed)}, newer than ${max}: build it with --use-napi-cross\n`);
      process.exit(1);
    }
  } catch (err) {
    process.stderr.write(`${err.message}\n`);
    process.exit(1);
  }
}
