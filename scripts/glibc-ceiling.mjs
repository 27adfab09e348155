#!/usr/bin/env node
// The newest glibc a Linux binary needs, read from its ELF version-needs
// section with readelf (works for any architecture's ELF).
//
//   node scripts/glibc-ceiling.mjs FILE [MAX]   # exit 1 if FILE needs a glibc newer than MAX (default 2.17)
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/** `[major, minor, patch]` of the highest GLIBC_* version `file` requires. */
export function glibcNeeded(file) {
  let text;
  try {
    text = execFileSync('readelf', ['--version-info', '--wide', file], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  } catch (err) {
    throw new Error(err.code === 'ENOENT' ? 'readelf (binutils) is needed to read symbol versions' : `readelf failed on ${file}: ${err.stderr || err.message}`);
  }
  const needs = text.slice(text.indexOf('Version needs section'));
  const versions = [...needs.matchAll(/Name: GLIBC_(\d+)\.(\d+)(?:\.(\d+))?/g)].map((m) => [Number(m[1]), Number(m[2]), Number(m[3] ?? 0)]);
  if (versions.length === 0) throw new Error(`${file} lists no GLIBC symbol versions: is it a glibc binary?`);
  versions.sort((a, b) => a[0] - b[0] || a[1] - b[1] || a[2] - b[2]);
  return versions.at(-1);
}

export const versionName = ([major, minor, patch]) => `GLIBC_${major}.${minor}${patch ? `.${patch}` : ''}`;

/** Is `needed` newer than `max` (`[major, minor]`)? */
export const newerThan = (needed, [major, minor]) => needed[0] > major || (needed[0] === major && needed[1] > minor);

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
