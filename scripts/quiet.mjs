#!/usr/bin/env node
// Run a command with its output held back: on success print one line, on
// failure print everything it wrote, then the failure. For `npm test`,
// which should print only what failed.
//
//   node scripts/quiet.mjs LABEL -- COMMAND [ARGS…]
import { spawn } from 'node:child_process';

const args = process.argv.slice(2);
const dash = args.indexOf('--');
if (dash < 1 || dash === args.length - 1) {
  process.stderr.write('usage: quiet.mjs LABEL -- COMMAND [ARGS…]\n');
  process.exit(2);
}
const label = args.slice(0, dash).join(' ');
const [command, ...rest] = args.slice(dash + 1);
const started = Date.now();
const chunks = [];
// A shell only on Windows, where npm/npx/cargo may be .cmd shims.
const child = spawn(command, rest, { stdio: ['ignore', 'pipe', 'pipe'], shell: process.platform === 'win32' });
child.stdout.on('data', (c) => chunks.push(c));
child.stderr.on('data', (c) => chunks.push(c));
child.on('error', (err) => {
  process.stderr.write(`✖ ${label}: ${err.message}\n`);
  process.exit(1);
});
child.on('close', (code, signal) => {
  const seconds = ((Date.now() - started) / 1000).toFixed(1);
  if (code === 0) {
    process.stdout.write(`✔ ${label} (${seconds} s)\n`);
    return;
  }
  process.stderr.write(Buffer.concat(chunks));
  process.stderr.write(`✖ ${label} failed (${signal ?? `exit ${code}`}, ${seconds} s)\n`);
  process.exit(code || 1);
});
