// A `node --test` reporter: at the end, every skipped test with its reason,
// so that no skip passes unnoticed in a CI log (on GitHub Actions also in
// the job summary). Used next to the spec reporter:
//
//   NODE_OPTIONS="--test-reporter=spec --test-reporter-destination=stdout \
//     --test-reporter=./scripts/skip-summary.mjs --test-reporter-destination=stdout" npm run test:js
import { appendFileSync } from 'node:fs';
import { relative } from 'node:path';

export default async function* skipSummary(source) {
  const skips = [];
  for await (const { type, data } of source) {
    if (type !== 'test:pass' && type !== 'test:skip') continue;
    if (data.skip === undefined || data.skip === false) continue;
    const where = data.file ? `${relative(process.cwd(), data.file)}: ` : '';
    skips.push(`${where}${data.name} — ${data.skip === true ? '(no reason given)' : data.skip}`);
  }
  const text = `${skips.length} skipped test${skips.length === 1 ? '' : 's'}, with their reasons:\n${skips.map((s) => `  - ${s}`).join('\n')}\n`;
  if (process.env.GITHUB_STEP_SUMMARY) {
    appendFileSync(
      process.env.GITHUB_STEP_SUMMARY,
      `### Skipped tests (${process.platform}-${process.arch}, Node ${process.version})\n\n${skips.map((s) => `- ${s}`).join('\n') || 'none'}\n`,
    );
  }
  yield text;
}
