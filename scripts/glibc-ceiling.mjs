#!/usr/bin/env node
// The newest glibc a Linux binary needs, read from its ELF version-needs
// section (cli/elf.mjs: plain JS, any architecture's ELF, no binutils).
//
//   node scripts/glibc-ceiling.mjs FILE [MAX]   # exit 1 if FILE needs a glibc newer than MAX (default 2.17)
import { readFileSync } from 'node:fs';
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

if (process.argv[1] === fileURLToPath(import.meta.url)) {
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
