// What a newcomer sees first: the demo's transcript, and `npm test`'s
// reporter printing only what failed.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { TIME_SCALE } from './helpers.mjs';

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('..', import.meta.url));

test('the demo prints a chat transcript, not JSON-RPC', async () => {
  const { stdout } = await run(process.execPath, ['examples/demo.mjs'], { cwd: ROOT, timeout: 60_000 * TIME_SCALE });
  assert.doesNotMatch(stdout, /jsonrpc|[{]"/, stdout);
  assert.match(
    stdout,
    /^\? permission to Run `rm -rf build`: Allow once \/ Always allow \/ Reject \/ Always reject$/m,
    stdout,
  );
  assert.match(stdout, /^ {2}↳ Run `rm -rf build`: completed$/m, stdout);
  assert.match(stdout, /^agent: All done\.$/m, stdout);
  assert.match(stdout, /^turn ended: end_turn$/m, stdout);
});

test("the test reporter prints the failure, its file's output and a summary; nothing of what passed", async () => {
  const fixture = fileURLToPath(new URL('./fixtures/reporter/failing-suite.mjs', import.meta.url));
  // A run of its own, not a subtest of this one (the runner marks its children).
  const env = { ...process.env };
  delete env.NODE_TEST_CONTEXT;
  const result = await run(process.execPath, ['--test', '--test-reporter=./scripts/test-reporter.mjs', fixture], {
    cwd: ROOT,
    env,
    timeout: 60_000 * TIME_SCALE,
  }).then(
    () => assert.fail('a failing test must fail the run'),
    (err) => err,
  );
  assert.equal(result.code, 1);
  const out = result.stdout;
  assert.match(out, /✖ __test__\/fixtures\/reporter\/failing-suite\.mjs:\d+ › a failing test/);
  assert.match(out, /arithmetic is off/);
  assert.match(out, /│ noise from a passing test/); // the failing file's output, once
  assert.match(out, /✖ tests: 1 passed, 1 failed of 2 \(/);
  assert.doesNotMatch(out, /a passing test with noisy output/);
  assert.doesNotMatch(out, /^(ok|not ok|TAP version)/m);
});

test('a local build that needs a newer glibc than the release is warned about, loudly', async (t) => {
  const { currentPlatform } = await import('../lib/loader.js');
  const platform = currentPlatform();
  if (!platform.endsWith('-gnu')) return t.skip(`glibc builds only (this is ${platform})`);
  const { localBuildWarning, glibcNeeded } = await import('../scripts/glibc-ceiling.mjs');
  const binary = fileURLToPath(new URL(`../acp-native.${platform}.node`, import.meta.url));
  const needed = glibcNeeded(binary).slice(0, 2).join('.');
  // Against a floor below what it needs: the warning names both and the way out.
  const warning = localBuildWarning(binary, [2, 0]);
  assert.match(warning, new RegExp(`needs GLIBC_${needed.replace('.', '\\.')}`));
  assert.match(warning, /The release needs only GLIBC_2\.0/);
  assert.match(warning, /npm run build -- --use-napi-cross/);
  assert.match(warning, /npm run pack:local/);
  // At or above what it needs: silence.
  assert.equal(localBuildWarning(binary, glibcNeeded(binary)), null);
});
