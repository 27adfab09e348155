import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { builtinSession, eventually, tempTree, termArg } from './builtin-helpers.mjs';
import { processes, TIME_SCALE } from './helpers.mjs';

// A `command` without `args` is a command line, run by the shell as Zed runs
// it (claude-code-acp sends these). The lines are POSIX `sh`.
const GUARD = { timeout: 60_000 * TIME_SCALE, skip: process.platform === 'win32' && 'runs sh lines' };
const linuxOnly = { skip: process.platform !== 'linux' && 'scans /proc (Linux)' };

/** The last `kind=` report of the mock agent, parsed. */
function last(updates, kind) {
  const texts = updates
    .filter((u) => u.sessionUpdate === 'agent_message_chunk' && u.content.text.startsWith(`${kind}=`))
    .map((u) => JSON.parse(u.content.text.slice(kind.length + 1)));
  return texts.at(-1);
}

const live = (pid) => processes().some((p) => p.pid === pid && p.state !== 'Z' && p.state !== 'X');

test('terminal shell line: redirection, pipeline, chaining and expansion run in the cwd, with env', GUARD, async () => {
  const t = tempTree('term-shell');
  const { client, run, updates } = await builtinSession({ terminals: { env: { FROM_HOST: 'host' } } }, t.root);
  try {
    await run(`term:${termArg({ command: 'echo shell-ok > shell-made.txt' })} term-wait term-release`);
    assert.deepEqual(last(updates, 'wait').result, { exitCode: 0, signal: null });
    assert.equal(readFileSync(join(t.root, 'shell-made.txt'), 'utf8'), 'shell-ok\n');

    const line =
      'printf "a\\nb\\nc\\n" | wc -l | tr -d " " && cd .. && basename "$PWD"; echo "$FROM_HOST-$FROM_AGENT" $((6*7))';
    const env = [{ name: 'FROM_AGENT', value: 'agent' }];
    await run(`term:${termArg({ command: line, env })} term-wait term-output term-release`);
    assert.deepEqual(last(updates, 'output').result, {
      output: `3\n${t.dir.split('/').at(-1)}\nhost-agent 42\n`,
      truncated: false,
      exitStatus: { exitCode: 0, signal: null },
    });

    // The start directory is still confined (what the line does is not).
    const outside = await run(`term:${termArg({ command: 'pwd', cwd: t.outside })}`, 'term');
    assert.equal(outside.error.data.reason, 'outsideRoots');
    // A line naming a missing program is the shell's failure, as in a terminal.
    await run(`term:${termArg({ command: 'definitely-not-a-command-acp' })} term-wait term-output term-release`);
    assert.equal(last(updates, 'wait').result.exitCode, 127);
    assert.match(last(updates, 'output').result.output, /definitely-not-a-command-acp/);
  } finally {
    await client.close();
    t.cleanup();
  }
});

test('terminal shell line: release kills the shell and what it started, grandchildren included', {
  ...GUARD,
  ...linuxOnly,
}, async () => {
  const t = tempTree('term-shell-tree');
  const { client, run, updates } = await builtinSession({ terminals: true }, t.root);
  try {
    // The line's shell starts a shell that starts a background sleep.
    const line = `sh -c 'sleep 1000 & echo $! > grandchild.pid; wait' & echo ready; wait`;
    await run(`term:${termArg({ command: line })} term-until:ready`);
    const pidFile = join(t.root, 'grandchild.pid');
    await eventually(() => existsSync(pidFile) && readFileSync(pidFile, 'utf8').endsWith('\n'), 'the grandchild runs');
    const grandchild = Number(readFileSync(pidFile, 'utf8'));
    assert.ok(live(grandchild), 'the grandchild runs');
    await run('term-release');
    assert.deepEqual(last(updates, 'release').result, {});
    await eventually(() => !live(grandchild), 'the grandchild is gone');
    assert.equal(client.openTerminals, 0);
  } finally {
    await client.close();
    t.cleanup();
  }
});

test(
  'terminal shell line: with shell: false a line is refused with a typed error, a bare program runs',
  GUARD,
  async () => {
    const t = tempTree('term-noshell');
    const { client, run, updates } = await builtinSession({ terminals: { shell: false } }, t.root);
    try {
      const refused = await run(`term:${termArg({ command: 'echo shell-ok > shell-made.txt' })}`, 'term');
      assert.equal(refused.error.code, -32602);
      assert.equal(refused.error.data.reason, 'shellDisabled');
      assert.match(refused.error.message, /args/);
      assert.equal(existsSync(join(t.root, 'shell-made.txt')), false);
      assert.equal(client.openTerminals, 0);
      await run(`term:${termArg({ command: 'pwd' })} term-wait term-output term-release`);
      assert.equal(last(updates, 'output').result.output, `${t.root}\n`);
      // A program with args is no shell line: no shell expands them.
      await run(`term:${termArg({ command: 'echo', args: ['$HOME', '>', 'x'] })} term-wait term-output term-release`);
      assert.equal(last(updates, 'output').result.output, '$HOME > x\n');
    } finally {
      await client.close();
      t.cleanup();
    }
    await assert.rejects(builtinSession({ terminals: { shell: 'no' } }, t.root), /terminals\.shell must be a boolean/);
  },
);

test('terminal shell line (Windows): cmd.exe runs redirection, chaining, pipes and %VAR% in the cwd', {
  timeout: 120_000 * TIME_SCALE,
  skip: process.platform !== 'win32' && 'cmd.exe',
}, async () => {
  const t = tempTree('term-cmd');
  const { client, run, updates } = await builtinSession({ terminals: true }, t.root);
  try {
    await run(`term:${termArg({ command: 'echo shell-ok > shell-made.txt' })} term-wait term-release`);
    assert.deepEqual(last(updates, 'wait').result, { exitCode: 0, signal: null });
    assert.equal(readFileSync(join(t.root, 'shell-made.txt'), 'utf8'), 'shell-ok \r\n');
    const env = [{ name: 'FROM_AGENT', value: 'agent' }];
    await run(
      `term:${termArg({ command: 'echo one&& echo "two words" | find "two"&& echo %FROM_AGENT%-x', env })} term-wait term-output term-release`,
    );
    assert.equal(last(updates, 'output').result.output, 'one\r\n"two words" \r\nagent-x\r\n');
  } finally {
    await client.close();
    t.cleanup();
  }
});
