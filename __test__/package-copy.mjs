// A copy of the package as npm would install it (the files package.json
// lists, no binary), for tests that lay out installs and bundles.
import { cpSync, mkdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = fileURLToPath(new URL('..', import.meta.url));

/** Copy the package's listed files into `dest`; returns `dest`. */
export function copyPackage(dest) {
  const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'));
  for (const file of [...pkg.files, 'package.json']) {
    mkdirSync(dirname(join(dest, file)), { recursive: true });
    cpSync(join(ROOT, file), join(dest, file), { recursive: true });
  }
  return dest;
}
