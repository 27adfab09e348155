// A `node --test` reporter that prints only what failed: each failed test
// with its error, the output of the file it ran in (once), then one summary
// line. Passing tests, their diagnostics and their output print nothing.
//
//   node --test --test-reporter=./scripts/test-reporter.mjs __test__/
import { relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { inspect } from 'node:util';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
// Forward slashes on every OS: the same line whether CI ran on Windows or not.
const shown = (file) =>
  file
    ? relative(ROOT, file.startsWith('file:') ? fileURLToPath(file) : file)
        .split(sep)
        .join('/')
    : '?';

export default async function* quietReporter(source) {
  const output = new Map(); // file → its captured stdout/stderr text
  const printed = new Set(); // files whose output was printed
  const summary = {};
  for await (const event of source) {
    const { type, data } = event;
    if (type === 'test:stdout' || type === 'test:stderr') {
      output.set(data.file, (output.get(data.file) ?? '') + data.message);
    } else if (type === 'test:fail') {
      const error = data.details?.error;
      // A parent fails because a subtest did: the subtest was reported.
      if (error?.failureType === 'subtestsFailed') continue;
      const cause = error?.cause ?? error;
      let text = `\n✖ ${shown(data.file)}:${data.line ?? '?'} › ${data.name}\n`;
      text += `${inspect(cause, { colors: false, depth: 4 }).replace(/^/gm, '    ')}\n`;
      yield text;
    } else if (type === 'test:diagnostic' && data.nesting === 0) {
      const [key, value] = data.message.split(' ');
      if (['tests', 'pass', 'fail', 'cancelled', 'skipped', 'todo', 'duration_ms'].includes(key) && value !== undefined)
        summary[key] = Number(value);
    }
    // A file with a failure: its output once, after the failure.
    if (type === 'test:fail' && data.file && !printed.has(data.file) && output.get(data.file)) {
      printed.add(data.file);
      yield `  output of ${shown(data.file)}:\n${output.get(data.file).trimEnd().replace(/^/gm, '  │ ')}\n`;
    }
  }
  const seconds = ((summary.duration_ms ?? 0) / 1000).toFixed(1);
  const bad = (summary.fail ?? 0) + (summary.cancelled ?? 0);
  const parts = [`${summary.pass ?? 0} passed`];
  if (summary.fail) parts.push(`${summary.fail} failed`);
  if (summary.cancelled) parts.push(`${summary.cancelled} cancelled`);
  if (summary.skipped) parts.push(`${summary.skipped} skipped`);
  if (summary.todo) parts.push(`${summary.todo} todo`);
  yield `${bad ? '✖' : '✔'} tests: ${parts.join(', ')} of ${summary.tests ?? 0} (${seconds} s)\n`;
}
