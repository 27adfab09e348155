import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { builtinSession, enc, eventually, groupMembers, pidsWithArg, tempTree, termArg } from './builtin-helpers.mjs';
import { processes, TIME_SCALE } from './helpers.mjs';
import { getPriority } from 'node:os';

// Only against a hang: a broken teardown must fail the run, not stall it.
// The commands run here are POSIX `sh` scripts.
const GUARD = { timeout: 60_000 * TIME_SCALE, skip: process.platform === 'win32' && 'runs sh scripts' };
const linuxOnly = { skip: process.platform !== 'linux' && 'scans /proc (Linux)' };

/** The texts of every `kind=` report, parsed, in order. */
function allReported(updates, kind) {
  return updates
    .filter((u) => u.sessionUpdate === 'agent_message_chunk' && u.content.text.startsWith(`${kind}=`))
    .map((u) => JSON.parse(u.content.text.slice(kind.length + 1)));
}

test('terminal: runs without a shell, captures stdout and stderr in order, reports the exit', GUARD, async () => {
  const t = tempTree('term-run');
  const { client, run, updates } = await builtinSession({ terminals: true }, t.root);
  try {
    const sh = termArg({ command: 'sh', args: ['-c', 'echo out; echo err >&2; echo out2; exit 3'] });
    await run(`term:${sh} term-wait term-output term-release`);
    assert.match(allReported(updates, 'term').at(-1).result.terminalId, /^term_\d+$/);
    assert.deepEqual(allReported(updates, 'wait').at(-1).result, { exitCode: 3, signal: null });
    assert.deepEqual(allReported(updates, 'output').at(-1).result, {
      output: 'out\nerr\nout2\n',
      truncated: false,
      exitStatus: { exitCode: 3, signal: null },
    });
    assert.deepEqual(allReported(updates, 'release').at(-1).result, {});
    // Arguments reach the program as they are: no shell expands them.
    const echo = termArg({ command: 'echo', args: ['$HOME', '*', '; ls', '`id`'] });
    await run(`term:${echo} term-wait term-output term-release`);
    assert.equal(allReported(updates, 'output').at(-1).result.output, '$HOME * ; ls `id`\n');
  } finally {
    await client.close();
    t.cleanup();
  }
});

test('terminal: cwd defaults to the session cwd, must stay inside it; env is applied', GUARD, async () => {
  const t = tempTree('term-cwd');
  const { client, run, updates } = await builtinSession({ terminals: { env: { FROM_HOST: 'host' } } }, t.root);
  try {
    await run(`term:${termArg({ command: 'pwd' })} term-wait term-output term-release`);
    assert.equal(allReported(updates, 'output').at(-1).result.output, `${t.root}\n`);
    const refused = await run(`term:${termArg({ command: 'pwd', cwd: t.outside })}`, 'term');
    assert.equal(refused.error.code, -32602);
    assert.equal(refused.error.data.reason, 'outsideRoots');
    assert.equal(
      (await run(`term:${termArg({ command: 'pwd', cwd: '/' })}`, 'term')).error.data.reason,
      'outsideRoots',
    );
    const env = termArg({
      command: 'sh',
      args: ['-c', 'echo "$FROM_HOST-$FROM_AGENT"'],
      env: [{ name: 'FROM_AGENT', value: 'agent' }],
    });
    await run(`term:${env} term-wait term-output term-release`);
    assert.equal(allReported(updates, 'output').at(-1).result.output, 'host-agent\n');
  } finally {
    await client.close();
    t.cleanup();
  }
});

test('terminal: a long-running command is killed; its id stays valid until release', GUARD, async () => {
  const t = tempTree('term-kill');
  const { client, run, updates } = await builtinSession({ terminals: true }, t.root);
  try {
    const long = termArg({ command: 'sh', args: ['-c', 'echo started; exec sleep 1000'] });
    await run(`term:${long} term-until:started term-output`);
    assert.equal(allReported(updates, 'output').at(-1).result.exitStatus, undefined); // still running
    await run(`term-kill term-wait term-output`);
    assert.deepEqual(allReported(updates, 'kill').at(-1).result, {});
    assert.deepEqual(allReported(updates, 'wait').at(-1).result, { exitCode: null, signal: 'SIGKILL' });
    const after = allReported(updates, 'output').at(-1).result;
    assert.equal(after.output, 'started\n');
    assert.deepEqual(after.exitStatus, { exitCode: null, signal: 'SIGKILL' });
    // Killing again is harmless; release frees the id.
    await run(`term-kill term-release term-output`);
    assert.deepEqual(allReported(updates, 'kill').at(-1).result, {});
    assert.equal(allReported(updates, 'output').at(-1).error.code, -32002);
  } finally {
    await client.close();
    t.cleanup();
  }
});

test('terminal: output is truncated from the start on a UTF-8 character boundary', GUARD, async () => {
  const t = tempTree('term-trunc');
  const { client, run, updates } = await builtinSession({ terminals: true }, t.root);
  const printed = async (text, outputByteLimit) => {
    const p = termArg({ command: 'sh', args: ['-c', 'printf %s "$1"', 'sh', text], outputByteLimit });
    await run(`term:${p} term-wait term-output term-release`);
    return allReported(updates, 'output').at(-1).result;
  };
  try {
    // a(1) é(2) 日(3) 😀(4) = 10 bytes.
    assert.deepEqual(await printed('aé日😀', 10), {
      output: 'aé日😀',
      truncated: false,
      exitStatus: { exitCode: 0, signal: null },
    });
    assert.equal((await printed('aé日😀', 7)).output, '日😀'); // cut lands on 日's first byte
    const inside = await printed('aé日😀', 6); // cut lands inside 日: it goes whole
    assert.equal(inside.output, '😀');
    assert.equal(inside.truncated, true);
    assert.equal((await printed('aé日😀', 0)).output, '');
    // Much more output than the limit, in many writes.
    const many = termArg({
      command: 'sh',
      args: ['-c', 'i=0; while [ $i -lt 2000 ]; do printf "é%04d日" $i; i=$((i+1)); done'],
      outputByteLimit: 1001,
    });
    await run(`term:${many} term-wait term-output term-release`);
    const big = allReported(updates, 'output').at(-1).result;
    assert.equal(big.truncated, true);
    assert.ok(Buffer.byteLength(big.output) <= 1001 && Buffer.byteLength(big.output) >= 998, big.output.length);
    assert.ok(big.output.endsWith('é1999日'));
    assert.ok(!big.output.includes('\uFFFD'));
  } finally {
    await client.close();
    t.cleanup();
  }
});

test('terminal: release while running kills the process group and answers the pending wait', {
  ...GUARD,
  ...linuxOnly,
}, async () => {
  const t = tempTree('term-release');
  const marker = `acp-release-${randomUUID()}`;
  const { client, run, updates } = await builtinSession({ terminals: true }, t.root);
  try {
    // A background grandchild in the same group, and a marker to find it by.
    const tree = termArg({ command: 'sh', args: ['-c', 'sleep 1000 & echo ready; sleep 1000; :', marker] });
    await run(`term:${tree} term-until:ready`);
    const [leader] = pidsWithArg(marker);
    assert.ok(leader, 'the terminal process runs');
    assert.ok(groupMembers(leader).length >= 2, 'sh and its background sleep share its group');
    await run(`term-release-while-waiting term-output`);
    assert.deepEqual(allReported(updates, 'release').at(-1).result, {});
    assert.deepEqual(allReported(updates, 'waited').at(-1).result, { exitCode: null, signal: 'SIGKILL' });
    assert.equal(allReported(updates, 'output').at(-1).error.data.reason, 'notFound');
    await eventually(() => groupMembers(leader).length === 0, 'the whole group is gone');
    assert.equal(client.openTerminals, 0);
  } finally {
    await client.close();
    t.cleanup();
  }
});

test('terminal: 50 running terminals are killed, groups and all, when the client closes', {
  ...GUARD,
  ...linuxOnly,
}, async () => {
  const t = tempTree('term-50');
  const marker = `acp-fifty-${randomUUID()}`;
  const { client, run, updates } = await builtinSession({ terminals: { maxTerminals: 50 } }, t.root);
  try {
    const tree = termArg({ command: 'sh', args: ['-c', 'sleep 1000 & sleep 1000; :', marker] });
    // 51 at once: the cap refuses exactly one.
    await run(`terms:51:${tree}`);
    const replies = allReported(updates, 'terms').at(-1);
    assert.equal(replies.filter((r) => r.result?.terminalId).length, 50);
    const refused = replies.filter((r) => r.error);
    assert.equal(refused.length, 1);
    assert.equal(refused[0].error.data.reason, 'tooManyTerminals');
    assert.equal(client.openTerminals, 50);
    // Group leaders only: a shell's child forked for `sleep &` carries the
    // shell's argv (the marker) until it execs, and may be caught in between.
    const groupLeaders = new Set(
      processes()
        .filter((p) => p.pgrp === p.pid)
        .map((p) => p.pid),
    );
    const leaders = pidsWithArg(marker).filter((pid) => groupLeaders.has(pid));
    assert.equal(leaders.length, 50);
    for (const pid of leaders)
      assert.ok(
        groupMembers(pid).some((p) => p.pid === pid),
        'each leads its own group',
      );

    const exit = await client.close();
    assert.equal(exit.reason, 'closed');
    await eventually(() => leaders.every((pid) => groupMembers(pid).length === 0), 'every terminal group is gone');
  } finally {
    client.kill();
    t.cleanup();
  }
});

test('terminal: kill() of the client kills its terminals at once', { ...GUARD, ...linuxOnly }, async () => {
  const t = tempTree('term-kill-client');
  const marker = `acp-killed-${randomUUID()}`;
  const { client, run } = await builtinSession({ terminals: true }, t.root);
  try {
    await run(`term:${termArg({ command: 'sh', args: ['-c', 'sleep 1000; :', marker] })}`);
    const [leader] = pidsWithArg(marker);
    assert.ok(leader);
    client.kill();
    await eventually(() => groupMembers(leader).length === 0, 'the terminal group is gone');
  } finally {
    t.cleanup();
  }
});

for (const mode of ['exit', 'throw']) {
  test(`terminal: groups are killed when the host ends by process ${mode}`, { ...GUARD, ...linuxOnly }, async () => {
    const t = tempTree(`term-host-${mode}`);
    const marker = `acp-host-${mode}-${randomUUID()}`;
    const fixture = fileURLToPath(new URL('./fixtures/terminal-host.mjs', import.meta.url));
    try {
      const host = spawn(process.execPath, [fixture, mode, marker, t.root], { stdio: ['pipe', 'pipe', 'pipe'] });
      let out = '';
      host.stdout.on('data', (d) => (out += d));
      const ready = new Promise((resolve) => host.stdout.on('data', () => out.includes('terminal ready') && resolve()));
      const exited = new Promise((resolve) => host.on('exit', resolve));
      await ready;
      // (the host and its reapers, forks of it, have the marker in their argv too)
      const [leader] = pidsWithArg(marker).filter((pid) =>
        readFileSync(`/proc/${pid}/cmdline`, 'utf8').startsWith('sh\0'),
      );
      assert.ok(leader, 'the terminal runs');
      assert.ok(groupMembers(leader).length >= 2, 'with a background grandchild in its group');
      host.stdin.end('go\n');
      const code = await exited;
      assert.equal(code, mode === 'exit' ? 0 : 1, out);
      // Not just the leader: the grandchild in its group too.
      await eventually(() => groupMembers(leader).length === 0, 'the terminal group is gone');
    } finally {
      t.cleanup();
    }
  });
}

test('terminal: the cap frees up on release; spawn failures and foreign ids are errors', GUARD, async () => {
  const t = tempTree('term-errors');
  const { client, run, updates } = await builtinSession({ terminals: { maxTerminals: 1 } }, t.root);
  try {
    const sleeper = termArg({ command: 'sleep', args: ['1000'] });
    await run(`term:${sleeper}`);
    const first = allReported(updates, 'term').at(-1).result.terminalId;
    assert.equal((await run(`term:${sleeper}`, 'term')).error.data.reason, 'tooManyTerminals');
    // Another session cannot see (or release) this session's terminal.
    const { sessionId: other } = await client.newSession({ cwd: t.root });
    const seen = [];
    client.onSessionUpdate((p) => p.sessionId === other && seen.push(p.update.content?.text));
    await client.prompt({ sessionId: other, prompt: `use-term:${enc(first)} term-output term-release` });
    for (const text of seen.slice(-2)) assert.match(text, /"code":-32002/);
    assert.equal(client.openTerminals, 1);
    await run(`term-release term:${sleeper}`);
    const second = allReported(updates, 'term').at(-1).result.terminalId;
    assert.notEqual(second, first);
    await run('term-release');
    const missing = await run(`term:${termArg({ command: 'definitely-not-a-command-acp', args: ['x'] })}`, 'term');
    assert.equal(missing.error.code, -32603);
    assert.equal(missing.error.data.reason, 'spawnFailed');
    assert.equal(missing.error.data.errno, 'ENOENT');
    const bad = await run(`term:${termArg({ command: '' })}`, 'term');
    assert.equal(bad.error.code, -32602);
  } finally {
    await client.close();
    t.cleanup();
  }
});

test('terminal: a host handler for any terminal method takes all five', GUARD, async () => {
  const t = tempTree('term-host');
  const calls = [];
  const handlers = {
    'terminal/create': (p) => (calls.push(['create', p.command]), { terminalId: 'host-1' }),
    'terminal/output': () => ({ output: 'from host', truncated: false }),
    'terminal/wait_for_exit': () => ({ exitCode: 0, signal: null }),
    'terminal/kill': () => ({}),
    'terminal/release': () => (calls.push(['release']), {}),
  };
  const { client, run, updates } = await builtinSession({ terminals: true, handlers }, t.root);
  try {
    await run(`term:${termArg({ command: 'echo', args: ['x'] })} term-output term-release`);
    assert.equal(allReported(updates, 'term').at(-1).result.terminalId, 'host-1');
    assert.equal(allReported(updates, 'output').at(-1).result.output, 'from host');
    assert.deepEqual(calls, [['create', 'echo'], ['release']]);
    assert.equal(client.openTerminals, 0);
  } finally {
    await client.close();
    t.cleanup();
  }
});

test('terminal: commands run at the priority of the host, not at the lowered one of the built-in file jobs', {
  ...GUARD,
  ...linuxOnly,
}, async () => {
  // File jobs run on pool threads at nice +10, which a process started
  // there would inherit (and could not raise back): terminal/create must
  // not start its command on one.
  const t = tempTree('term-nice');
  const { client, run, updates } = await builtinSession({ fs: true, terminals: true }, t.root);
  try {
    // File jobs lower the priority of the pool threads they run on.
    await run(Array.from({ length: 8 }, () => `write:${enc('a.txt')}:${enc('x')} read:${enc('a.txt')}`).join(' '));
    const mark = randomUUID();
    await run(`term:${termArg({ command: 'sh', args: ['-c', 'sleep 1000; : $0', mark] })}`);
    await eventually(() => pidsWithArg(mark).length > 0, 'the command runs');
    const [pid] = pidsWithArg(mark);
    const nice = (p) => Number(readFileSync(`/proc/${p}/stat`, 'utf8').split(') ')[1].split(' ')[16]);
    // The host's own from getpriority(2): qemu-user fakes /proc/self/stat.
    assert.equal(nice(pid), getPriority(), 'the command inherits no lowered priority');
    assert.ok(allReported(updates, 'read').every((r) => r.result?.content === 'x'));
    await run('term-release');
  } finally {
    await client.close();
    t.cleanup();
  }
});
