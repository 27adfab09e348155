// What a newcomer sees first: the demo's transcript, and `npm test`'s
// reporter printing only what failed.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('..', import.meta.url));

test('the demo prints a chat transcript, not JSON-RPC', async () => {
  const { stdout } = await run(process.execPath, ['examples/demo.mjs'], { cwd: ROOT, timeout: 60_000 });
  assert.doesNotMatch(stdout, /jsonrpc|[{]"/, stdout);
  assert.match(stdout, /^\? permission to Run `rm -rf build`: Allow once \/ Always allow \/ Reject \/ Always reject$/m, stdout);
  assert.match(stdout, /^ {2}↳ Run `rm -rf build`: completed$/m, stdout);
  assert.match(stdout, /^agent: All done\.$/m, stdout);
  assert.match(stdout, /^turn ended: end_turn$/m, stdout);
});

test("the test reporter prints the failure, its file's output and a summary; nothing of what passed", async () => {
  const fixture = fileURLToPath(new URL('./fixtures/reporter/sample.test.mjs', import.meta.url));
  // A run of its own, not a subtest of this one (the runner marks its children).
  const env = { ...process.env };
  delete env.NODE_TEST_CONTEXT;
  const result = await run(process.execPath, ['--test', '--test-reporter=./scripts/test-reporter.mjs', fixture], { cwd: ROOT, env, timeout: 60_000 }).then(
    () => assert.fail('a failing test must fail the run'),
    (err) => err,
  );
  assert.equal(result.code, 1);
  const out = result.stdout;
  assert.match(out, /✖ __test__\/fixtures\/reporter\/sample\.test\.mjs:\d+ › a failing test/);
  assert.match(out, /arithmetic is off/);
  assert.match(out, /│ noise from a passing test/); // the failing file's output, once
  assert.match(out, /✖ tests: 1 passed, 1 failed of 2 \(/);
  assert.doesNotMatch(out, /a passing test with noisy output/);
  assert.doesNotMatch(out, /^(ok|not ok|TAP version)/m);
});
