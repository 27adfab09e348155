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
      assert.equal(
        pkg.scripts.test,
        `npm run build:debug --silent && cargo test --workspace --quiet && ${pkg.scripts['test:js']}`,
      );
    } else if (command === 'npm run pack-check') {
      assert.ok(workflow.includes('run: npm run pack-check -- --prebuilt "$APP_NAME.linux-x64-gnu.node"'));
    } else {
      assert.ok(workflow.includes(`run: ${command}`), `the workflow runs \`${command}\``);
    }
  }
});

/** The jobs, by name: the text of each (its lines under `  name:`). */
function jobs() {
  const section = workflow.slice(workflow.indexOf('\njobs:\n') + '\njobs:\n'.length);
  const parts = section.split(/^ {2}(?=[a-z-]+:$)/m).filter(Boolean);
  return new Map(parts.map((p) => [p.slice(0, p.indexOf(':')), p]));
}

/** The `- uses:` steps of a job's text, each with its `with:` lines. */
function steps(jobText) {
  return jobText.split(/^ {6}- /m).slice(1);
}

const RELEASE_JOBS = ['publish', 'github-release'];

test('a v* tag publishes after every check passed, then makes the GitHub release', () => {
  assert.match(workflow, /tags: \['v\*'\]/);
  const all = jobs();
  for (const name of RELEASE_JOBS) {
    assert.ok(
      // biome-ignore lint/suspicious/noTemplateCurlyInString: a GitHub Actions expression, not a JS template
      all.get(name).includes("if: ${{ startsWith(github.ref, 'refs/tags/v') }}"),
      `${name} runs on v* tags only`,
    );
  }
  const needs = all
    .get('publish')
    .match(/needs: \[(.+)\]/)[1]
    .split(', ');
  assert.deepEqual(needs.sort(), [...all.keys()].filter((j) => !RELEASE_JOBS.includes(j)).sort());
  assert.match(all.get('github-release'), /needs: publish\n/);
  assert.match(workflow, /npx napi artifacts\n/);
});

test('every package is published with npm provenance, and the release notes carry every SHA-256', () => {
  const publish = jobs().get('publish');
  const publishes = [...publish.matchAll(/npm publish\b.*$/gm)].map((m) => m[0]);
  assert.equal(publishes.length, 2, `one for the platform packages (a loop), one for the root: ${publishes}`);
  for (const command of publishes) assert.match(command, / --provenance --access public$/);
  assert.match(publish, /for dir in npm\/\*\/; do[\s\S]+npm publish "\$dir" --provenance/);
  assert.doesNotMatch(publish, /napi pre-publish/, 'it publishes without --provenance');
  assert.match(publish, /node scripts\/release-notes\.mjs --npm-dir npm --notes release-notes\.md --sums SHA256SUMS\n/);
  // The hashing runs after the binaries are in place and before anything is published.
  const order = ['npx napi artifacts', 'scripts/release-notes.mjs', 'npm publish'].map((s) => publish.indexOf(s));
  assert.deepEqual(
    [...order].sort((a, b) => a - b),
    order,
  );
  assert.ok(order.every((i) => i > 0));
  const release = jobs().get('github-release');
  assert.match(release, /sha256sum --check --strict \.\.\/notes\/SHA256SUMS/);
  assert.match(
    release,
    /gh release create "\$GITHUB_REF_NAME"[\s\S]+--notes-file notes\/release-notes\.md[\s\S]+release\/\*\.node notes\/SHA256SUMS/,
  );
});

// The hardening zizmor checks (.ci/run runs it); asserted here too so it
// holds wherever the JS tests run.

test('every action is pinned to a full commit SHA, its version in a comment', () => {
  const uses = [...workflow.matchAll(/^\s*(?:- )?uses: (.+)$/gm)].map((m) => m[1]);
  assert.ok(uses.length >= 10, `${uses.length} uses:`);
  const shaOf = new Map();
  for (const ref of uses) {
    const m = /^([\w.-]+\/[\w./-]+)@([0-9a-f]{40}) # (\S.*)$/.exec(ref);
    assert.ok(m, `pinned with a version comment: ${ref}`);
    const [, action, sha, version] = m;
    const seen = shaOf.get(action);
    if (seen) assert.deepEqual(seen, { sha, version }, `${action}: one pin throughout`);
    shaOf.set(action, { sha, version });
  }
});

test('Dependabot proposes the pin updates, with a cooldown', () => {
  const dependabot = readFileSync(join(ROOT, '.github/dependabot.yml'), 'utf8');
  assert.match(dependabot, /- package-ecosystem: github-actions\n\s+directory: \/\n/);
  assert.match(dependabot, /cooldown:\n\s+default-days: [1-9]\d*\n/);
});

test('no permissions at the top; each job asks only for what it needs', () => {
  const top = workflow.slice(0, workflow.indexOf('\njobs:\n'));
  assert.match(top, /^permissions: \{\}$/m);
  const expected = {
    publish: ['contents: read', 'id-token: write'],
    'github-release': ['contents: write'],
  };
  for (const [name, text] of jobs()) {
    const block = /^ {4}permissions:\n((?: {6}.+\n)+)/m.exec(text);
    assert.ok(block, `${name} has its own permissions`);
    const grants = block[1]
      .split('\n')
      .filter(Boolean)
      .map((l) => l.trim().replace(/ #.*$/, ''));
    assert.deepEqual(grants, expected[name] ?? ['contents: read'], name);
  }
});

test('checkouts keep no credentials; no cache anywhere (binaries built here are published)', () => {
  for (const [name, text] of jobs()) {
    for (const step of steps(text)) {
      if (/^uses: actions\/checkout@/.test(step))
        assert.match(step, /\n {10}persist-credentials: false\n/, `${name}: checkout`);
      if (/^uses: actions\/setup-node@/.test(step)) {
        assert.match(step, /\n {10}package-manager-cache: false\n/, `${name}: setup-node`);
        assert.doesNotMatch(step, /\n {10}cache:/, `${name}: setup-node`);
      }
      if (/^uses: mlugg\/setup-zig@/.test(step)) assert.match(step, /\n {10}use-cache: false\n/, `${name}: setup-zig`);
      assert.doesNotMatch(step, /^uses: (actions\/cache|Swatinem\/rust-cache)[@/]/, `${name}: no cache action`);
    }
  }
});

test('.ci/run and the lint job audit the workflows with the same zizmor, offline', () => {
  assert.match(ciRun, /zizmor --offline --strict-collection --min-severity medium \.github\/\n/);
  const version = ciRun.match(/^ZIZMOR_VERSION=(\S+)$/m)[1];
  assert.ok(
    jobs()
      .get('lint')
      .includes(`run: pipx run zizmor==${version} --offline --strict-collection --min-severity medium .github/\n`),
    `the lint job runs zizmor ${version}`,
  );
});
