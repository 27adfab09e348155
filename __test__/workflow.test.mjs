// The release workflow cannot run here; these checks keep it in step with
// package.json and with what .ci/run does locally.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import { createRequire } from 'node:module';

const { TRIPLES } = createRequire(import.meta.url)('../lib/loader.js');
const ROOT = fileURLToPath(new URL('..', import.meta.url));
const workflow = readFileSync(join(ROOT, '.github/workflows/release.yml'), 'utf8');
const ciRun = readFileSync(join(ROOT, '.ci/run'), 'utf8');
const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'));

/** The `build:` commands of the build matrix, by target. */
function buildCommands() {
  const commands = new Map();
  for (const m of workflow.matchAll(/target: (\S+)\n\s+platform: (\S+)\n\s+build: (.+)/g)) {
    commands.set(m[1], { platform: m[2], build: m[3] });
  }
  return commands;
}

test('every napi target is built by the workflow, the release way', () => {
  const commands = buildCommands();
  assert.deepEqual([...commands.keys()].sort(), [...pkg.napi.targets].sort());
  for (const [target, { platform, build }] of commands) {
    assert.ok(build.startsWith(`npm run build -- --target ${target}`), build);
    assert.match(pkg.scripts.build, /^napi build --platform --release\b/);
    if (target.endsWith('linux-gnu')) assert.match(build, /--use-napi-cross$/, `${target}: glibc 2.17 toolchain`);
    else if (target.endsWith('linux-musl')) assert.match(build, / -x$/, `${target}: zig`);
    else assert.equal(build, `npm run build -- --target ${target}`);
    assert.equal(TRIPLES[platform], target, `${platform} is the platform package the loader looks for on ${target}`);
  }
});

test('the workflow runs what .ci/run runs', () => {
  const local = ciRun
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => /^(cargo|npm) /.test(l));
  assert.ok(local.length >= 5, `.ci/run commands: ${local}`);
  for (const command of local) {
    if (command === 'npm test') {
      // Split in the workflow: core tests + JS tests against the downloaded binary.
      assert.match(workflow, /run: cargo test --workspace/);
      assert.match(workflow, /run: npm run test:js/);
      assert.equal(pkg.scripts.test, `npm run build:debug --silent && cargo test --workspace && ${pkg.scripts['test:js']}`);
    } else if (command === 'npm run pack-check') {
      assert.match(workflow, /run: npm run pack-check -- --prebuilt \$\{\{ env\.APP_NAME \}\}\.linux-x64-gnu\.node/);
    } else {
      assert.ok(workflow.includes(`run: ${command}`), `the workflow runs \`${command}\``);
    }
  }
});

test('a v* tag publishes with napi pre-publish after every check passed', () => {
  assert.match(workflow, /tags: \['v\*'\]/);
  assert.match(workflow, /if: \$\{\{ startsWith\(github\.ref, 'refs\/tags\/v'\) \}\}/);
  const needs = workflow.match(/needs: \[(.+)\]/)[1].split(', ');
  const jobsSection = workflow.slice(workflow.indexOf('\njobs:\n'));
  const jobs = [...jobsSection.matchAll(/^ {2}([a-z-]+):$/gm)].map((m) => m[1]).filter((j) => j !== 'publish');
  assert.deepEqual(needs.sort(), jobs.sort());
  assert.match(workflow, /npx napi artifacts\n/);
  assert.match(workflow, /npx napi pre-publish -t npm\n\s+npm publish --access public/);
});
