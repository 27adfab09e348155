#!/usr/bin/env node
// The release job's record of what it publishes: the SHA-256 of the binary
// in every platform package, as a Markdown table for the GitHub release
// notes and as a SHA256SUMS file (`sha256sum --check` format). Fails when a
// platform package (scripts/platform-packages.mjs) lacks its binary.
//
//   node scripts/release-notes.mjs [--npm-dir npm] [--notes FILE] [--sums FILE]
//
// Without --notes the Markdown goes to stdout. A user compares an installed
// binary with the table through `npx acp-native doctor`.
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { basename, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { platformPackages } from './platform-packages.mjs';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

/** `[{ name, version, file, bytes, sha256 }]`, one per platform package, in napi target order. */
export function hashPlatformBinaries(npmDir, rootPkg) {
  const prefix = `${rootPkg.name}-`;
  const rows = [];
  for (const [name, version] of Object.entries(rootPkg.optionalDependencies ?? platformPackages(rootPkg))) {
    if (!name.startsWith(prefix)) continue;
    const dir = join(npmDir, name.slice(prefix.length));
    const manifestPath = join(dir, 'package.json');
    if (!existsSync(manifestPath)) throw new Error(`${name}: no ${manifestPath}`);
    const manifest = JSON.parse(readFileSync(manifestPath, 'utf8'));
    if (manifest.name !== name) throw new Error(`${manifestPath} is ${manifest.name}, expected ${name}`);
    if (manifest.version !== version) throw new Error(`${name} is ${manifest.version}, the root depends on ${version}`);
    const file = join(dir, manifest.main);
    if (!existsSync(file)) throw new Error(`${name}: no binary at ${file} (did \`napi artifacts\` run?)`);
    const bytes = readFileSync(file);
    rows.push({
      name,
      version,
      file: basename(file),
      bytes: bytes.length,
      sha256: createHash('sha256').update(bytes).digest('hex'),
    });
  }
  if (rows.length === 0) throw new Error(`${rootPkg.name} has no platform packages`);
  return rows;
}

export function notesMarkdown(rows, rootPkg) {
  let md = `## Native binaries\n\n`;
  md += `Each platform package of ${rootPkg.name}@${rootPkg.version} holds one binary; all are published with npm provenance.\n`;
  md += `Check the one you have installed with \`npx acp-native doctor\`: its \`sha256\` must equal the one below.\n\n`;
  md += `| npm package | file | bytes | SHA-256 |\n|---|---|---:|---|\n`;
  for (const r of rows) md += `| \`${r.name}@${r.version}\` | \`${r.file}\` | ${r.bytes} | \`${r.sha256}\` |\n`;
  md += `\nThe same sums are attached as \`SHA256SUMS\` (\`sha256sum --check SHA256SUMS\` next to the attached binaries).\n`;
  return md;
}

export const sumsFile = (rows) => rows.map((r) => `${r.sha256}  ${r.file}\n`).join('');

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const args = process.argv.slice(2);
  const option = (name, fallback) => {
    const i = args.indexOf(name);
    return i >= 0 ? args[i + 1] : fallback;
  };
  try {
    const rootPkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'));
    const rows = hashPlatformBinaries(resolve(option('--npm-dir', join(ROOT, 'npm'))), rootPkg);
    const md = notesMarkdown(rows, rootPkg);
    const notes = option('--notes');
    if (notes) writeFileSync(notes, md);
    else process.stdout.write(md);
    const sums = option('--sums');
    if (sums) writeFileSync(sums, sumsFile(rows));
  } catch (err) {
    process.stderr.write(`release-notes: ${err.message}\n`);
    process.exit(1);
  }
}
