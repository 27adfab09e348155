#!/usr/bin/env node
// Copy LICENSE and THIRD_PARTY_NOTICES.md into every platform package
// (npm/<platform>/), whose tarball ships them next to the binary that links
// the crates the notices list. Run before publishing (the release workflow)
// and by pack-check; the copies are not committed.
//
//   node scripts/stage-notices.mjs [npm-dir]
import { copyFileSync, readdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
export const NOTICE_FILES = ['LICENSE', 'THIRD_PARTY_NOTICES.md'];

export function stageNotices(npmDir) {
  const dirs = readdirSync(npmDir, { withFileTypes: true }).filter((d) => d.isDirectory());
  for (const dir of dirs) for (const file of NOTICE_FILES) copyFileSync(join(ROOT, file), join(npmDir, dir.name, file));
  return dirs.map((d) => d.name);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const npmDir = resolve(process.argv[2] ?? join(ROOT, 'npm'));
  console.log(`${NOTICE_FILES.join(' and ')} copied into ${stageNotices(npmDir).length} packages under ${npmDir}`);
}
