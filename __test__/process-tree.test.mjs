// Every process we start dies with the host, however the host ends, and we
// never signal a process that is not ours. Linux: the reaper design (see
// README "Lifecycle guarantees"); elsewhere these skip visibly.
import { describe, it, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { alive, procStat, processes, reported, MOCK_AGENT, TIME_SCALE, SCALED_TIMEOUTS, EMULATOR } from './helpers.mjs';
import { AcpClient } from '../index.mjs';
import { builtinSession, eventually, tempTree, termArg } from './builtin-helpers.mjs';

const LINUX = process.platform === 'linux';
const linuxOnly = { skip: !LINUX && 'needs /proc and the Linux reaper' };
// qemu-user 7.2 refuses prctl(PR_SET_CHILD_SUBREAPER): a setsid daemon
// goes to pid 1, out of the emulated reaper's reach.
const NO_SUBREAPER =
  EMULATOR === 'qemu-user' &&
  'qemu-user refuses prctl(PR_SET_CHILD_SUBREAPER): the daemon is reparented to pid 1, not to the emulated reaper; runs natively (Linux x64, the arm64 runner)';
const HOST = fileURLToPath(new URL('./fixtures/tree-host.mjs', import.meta.url));
/** Hang guard only: the survivors are expected gone well within it. */
const GONE_WITHIN_MS = 15_000;

/** Live processes whose environment carries `ACP_TREE_MARK=mark`, with their session id. */
function marked(mark) {
  const needle = `ACP_TREE_MARK=${mark}\0`;
  const out = [];
  for (const p of processes()) {
    if (p.state === 'Z' || p.state === 'X') continue;
    try {
      if (!readFileSync(`/proc/${p.pid}/environ`, 'latin1').includes(needle)) continue;
      const cmd = readFileSync(`/proc/${p.pid}/cmdline`, 'utf8').split('\0')[0];
      out.push({ pid: p.pid, ppid: p.ppid, sid: p.sid, state: p.state, cmd });
    } catch {
      // gone meanwhile, or not ours to read
    }
  }
  return out;
}

/** SIGKILL a process of ours (found by our mark) that may have just ended. */
function killOurs(pid) {
  try {
    process.kill(pid, 'SIGKILL');
  } catch (err) {
    if (err.code !== 'ESRCH') throw err;
  }
}

function lines(stream) {
  let buf = '';
  const waiters = [];
  stream.on('data', (d) => {
    buf += d;
    for (const w of waiters.splice(0)) if (!w()) waiters.push(w);
  });
  return (text) =>
    new Promise((resolve) => {
      const check = () => buf.includes(text) && (resolve(), true);
      if (!check()) waiters.push(check);
    });
}

/** Wait until no marked process but `except` is left; the ms it took, or -1. */
async function survivorsGone(mark, except) {
  const start = Date.now();
  while (Date.now() - start < GONE_WITHIN_MS) {
    if (marked(mark).every((p) => p.pid === except)) return Date.now() - start;
    await sleep(20);
  }
  return -1;
}

const SHAPES = ['direct', 'wrapper', 'daemon', 'terminal'];
const MODES = ['close', 'kill', 'return', 'exit', 'throw', 'SIGTERM', 'SIGINT', 'SIGHUP', 'SIGKILL'];
// Trees that turn on their reaper (see tree-host.mjs), and the host death
// modes each is run with. A reaper stopped again and again is beaten for
// sure only while the host runs its code (exit hooks included); when a
// signal kills the host it is a race the reaper has won in every run here,
// so those cases are not in the matrix (docs/process-model.md, limits).
const HOSTILE = {
  stopped: ['close', 'kill', 'exit', 'SIGKILL', 'SIGTERM'],
  'terminal-stopped': ['close', 'kill', 'exit', 'SIGKILL'],
  restopped: ['close', 'kill', 'exit'],
};
const CASES = [
  ...SHAPES.flatMap((shape) => MODES.map((mode) => [shape, mode])),
  ...Object.entries(HOSTILE).flatMap(([shape, modes]) => modes.map((mode) => [shape, mode])),
];
const table = [];

/** The hostile shapes are set up: a helper tried to join a reaper's group, and a reaper child of the host is stopped. */
async function hostileReady(shape, mark, host) {
  if (shape !== 'restopped') {
    await eventually(
      () => marked(mark).some((p) => p.cmd === 'joined' || p.cmd === 'refused'),
      'the helper tried to join',
    );
  }
  await eventually(() => marked(mark).some((p) => p.ppid === host && p.state === 'T'), 'a reaper is stopped').catch(
    (err) => {
      throw new Error(`${err.message}: ${JSON.stringify(marked(mark))}`);
    },
  );
}

describe('no survivors: host death mode × process shape', { ...linuxOnly, concurrency: 4 }, () => {
  for (const [shape, mode] of CASES) {
    const noSubreaper = (shape === 'daemon' || shape === 'terminal') && NO_SUBREAPER;
    it(`${shape} agent, host ends by ${mode}`, { timeout: 60_000 * TIME_SCALE, skip: noSubreaper }, async () => {
      const mark = randomUUID();
      const tree = tempTree(`tree-${shape}-${mode}`);
      const host = spawn(process.execPath, [HOST, shape, mode, tree.root], {
        env: { ...process.env, ACP_TREE_MARK: mark },
        stdio: ['pipe', 'pipe', 'pipe'],
      });
      // Held, not printed: the `throw` host's uncaught exception is the point.
      let stderr = '';
      host.stderr.on('data', (d) => (stderr += d));
      const exited = new Promise((resolve) => host.on('exit', (code, signal) => resolve({ code, signal })));
      // 'exit' may come before the last of its stderr is read; 'close' after.
      const stdioClosed = new Promise((resolve) => host.on('close', resolve));
      const said = lines(host.stdout);
      try {
        await Promise.race([said('ready'), exited.then((e) => assert.fail(`host ended early: ${JSON.stringify(e)}`))]);
        // The shape is really there before the host goes. Waited for:
        // a forked shell may not have exec'd its `sleep` yet when the
        // agent is ready (seen on a loaded machine).
        if (shape === 'wrapper') {
          await eventually(
            () => marked(mark).some((p) => p.pid !== host.pid && p.cmd === 'sleep'),
            'lingering grandchild',
          );
        }
        if (shape === 'daemon' || shape === 'terminal') {
          // Detached: its session's leader (the `setsid sh`) has exited.
          const daemon = (p, all) => p.cmd === 'sleep' && !all.some((q) => q.pid === p.sid);
          await eventually(() => marked(mark).some((p, _, all) => daemon(p, all)), 'a setsid daemon runs');
        }
        if (shape in HOSTILE) await hostileReady(shape, mark, host.pid);
        let except = -1;
        if (mode === 'close' || mode === 'kill') {
          host.stdin.write('go\n');
          await said('done');
          except = host.pid; // the host lives on; its agent tree must not
        } else if (mode.startsWith('SIG')) {
          host.kill(mode);
          assert.equal((await exited).signal, mode);
        } else {
          host.stdin.write('go\n');
          await exited;
          if (mode === 'throw') {
            // Bounded: a survivor holding the pipe is the survivors check's to report.
            await Promise.race([stdioClosed, sleep(10_000 * TIME_SCALE)]);
            assert.match(stderr, /Error: host crashed/, 'the host died of its uncaught exception');
          }
        }
        const ms = await survivorsGone(mark, except);
        const left = marked(mark).filter((p) => p.pid !== except);
        table.push({ shape, mode, survivors: left.length, ms });
        assert.deepEqual(left, [], `survivors of ${shape}/${mode}; host stderr: ${stderr}`);
      } finally {
        host.stdin.end();
        for (const p of marked(mark)) killOurs(p.pid); // ours: carries our mark
        await exited;
        tree.cleanup();
      }
    });
  }
});

test('matrix summary', linuxOnly, () => {
  // One line per case: the survivors table, printed for the record.
  for (const r of table) console.log(`# tree ${r.shape} ${r.mode}: ${r.survivors} survivors, gone in ${r.ms} ms`);
});

/** Start time of `pid` (clock ticks since boot), or null: a pid plus this names one process. */
function startTime(pid) {
  const fields = procStat(pid);
  return !fields || fields[0] === 'Z' || fields[0] === 'X' ? null : fields[19];
}

/** Place a new process group leader at `pid` via ns_last_pid: {pid, start}, or null. */
async function strangerAt(pid, mark) {
  for (let attempt = 0; attempt < 100; attempt++) {
    // The write and the fork are two steps of one shell: little room for
    // another process on the machine to take the pid in between.
    const sh = spawn(
      'sh',
      ['-c', `echo ${pid - 1} > /proc/sys/kernel/ns_last_pid; setsid sleep 1000 </dev/null >/dev/null 2>&1 & echo $!`],
      {
        stdio: ['ignore', 'pipe', 'ignore'],
        env: { ...process.env, ACP_TREE_MARK: mark },
      },
    );
    let out = '';
    sh.stdout.on('data', (d) => (out += d));
    await new Promise((resolve) => sh.on('close', resolve));
    const got = Number(out.trim());
    if (got === pid) return { pid, start: startTime(pid) };
    if (marked(mark).some((p) => p.pid === got)) killOurs(got); // ours (our mark)
    await sleep(5);
  }
  return null;
}

/** Is the stranger the same process, alive, with no signal pending (a SIGKILL just sent may not have landed yet)? */
function untouchedStranger(s) {
  if (s.start === null || startTime(s.pid) !== s.start) return false;
  try {
    const status = readFileSync(`/proc/${s.pid}/status`, 'utf8');
    return !/^(SigPnd|ShdPnd):\s*0*[1-9a-f]/m.test(status);
  } catch {
    return false;
  }
}

function canSetLastPid() {
  try {
    writeFileSync('/proc/sys/kernel/ns_last_pid', readFileSync('/proc/sys/kernel/ns_last_pid', 'utf8'));
    return true;
  } catch {
    return false;
  }
}

/** Is the pid taken at all (a zombie counts: it cannot be reused)? */
const taken = (pid) => {
  try {
    readFileSync(`/proc/${pid}/stat`);
    return true;
  } catch {
    return false;
  }
};

test('a reused pid is never signalled: terminal release/kill, agent kill/close', {
  skip: (!LINUX && 'Linux only') || (!canSetLastPid() && 'needs root to write /proc/sys/kernel/ns_last_pid'),
  timeout: 120_000 * TIME_SCALE,
}, async (ctx) => {
  const mark = randomUUID();
  const t = tempTree('reuse');
  const strangers = [];
  const { client, run } = await builtinSession({ terminals: true }, t.root);
  try {
    const agentPid = client.pid;
    // One process, so nothing else keeps its group id alive once it ends.
    const env = [{ name: 'ACP_TREE_MARK', value: mark }];
    await run(`term:${termArg({ command: 'sleep', args: ['1000'], env })}`);
    const [leader] = marked(mark).map((p) => p.pid);
    assert.ok(leader, 'the terminal runs');
    process.kill(leader, 'SIGKILL'); // its command ends (we started it)
    assert.equal((await run('term-wait', 'wait')).result.signal, 'SIGKILL');
    if (taken(leader)) {
      // Kept unreaped until release: nobody can get this pid (or group id).
      assert.equal(await strangerAt(leader, mark), null, 'the pid of an unreleased terminal was reused');
    } else {
      // (Before the fix: reaped at once, so the pid was free for anyone.)
      strangers.push(await strangerAt(leader, mark));
    }
    // Each stranger must be untouched after each step (checked right away:
    // once reaped, a killed stranger's pid could be handed on again).
    const untouched = (step) => {
      for (const s of strangers.filter(Boolean)) {
        assert.ok(untouchedStranger(s), `stranger ${s.pid} was signalled by ${step}`);
      }
    };
    await run('term-release', 'release');
    untouched('terminal/release');
    for (let i = 0; i < 500 && taken(leader); i++) await sleep(10);
    const stranger = await strangerAt(leader, mark);
    // Other processes on a busy machine can take the pid first, 50 times.
    if (!stranger) return ctx.skip('could not force the reuse of the released pid (machine busy)');
    strangers.push(stranger);
    await run('term-kill', 'kill'); // an unknown terminal now
    untouched('terminal/kill');
    // The agent ends; its pid too is handed to a stranger before kill/close.
    await run('crash:3').catch(() => {});
    await new Promise((resolve) => (client.closed ? resolve() : client.once('exit', resolve)));
    for (let i = 0; i < 500 && taken(agentPid); i++) await sleep(10);
    const agentStranger = await strangerAt(agentPid, mark);
    if (!agentStranger) return ctx.skip('could not force the reuse of the agent pid (machine busy)');
    strangers.push(agentStranger);
    client.kill();
    untouched('kill()');
    await client.close();
    await sleep(200); // a stray signal from a reaper would have landed by now
    untouched('close()');
  } finally {
    for (const s of strangers.filter(Boolean)) if (untouchedStranger(s)) killOurs(s.pid);
    await client.close();
    t.cleanup();
  }
});

test('a terminal starts in the directory that was checked: 200 runs against a symlink swap', {
  ...linuxOnly,
  timeout: 300_000 * TIME_SCALE,
}, async () => {
  const t = tempTree('cwd-race');
  const d = join(t.root, 'd');
  const real = join(t.root, 'real');
  const link = join(t.root, 'link');
  mkdirSync(real);
  symlinkSync(t.outside, link);
  // Swaps root/d between the real directory and a symlink to outside, nonstop.
  const swapper = spawn(
    process.execPath,
    [
      '-e',
      `const fs = require('fs'); const [d, real, link] = process.argv.slice(1);
      for (;;) for (const [a, b] of [[real, d], [d, real], [link, d], [d, link]]) try { fs.renameSync(a, b); } catch {}`,
      d,
      real,
      link,
    ],
    { stdio: 'ignore' },
  );
  const { client, run, updates } = await builtinSession({ terminals: true }, t.root);
  const seen = { inside: 0, refused: 0, escaped: [] };
  try {
    const create = termArg({ command: 'sh', args: ['-c', 'pwd -P'], cwd: d });
    for (let i = 0; i < 200; i++) {
      updates.length = 0;
      await run(`term:${create} term-wait term-output term-release`);
      const term = reported(updates, 'term');
      if (term.error) {
        seen.refused++;
        continue;
      }
      const where = reported(updates, 'output').result.output.trim();
      if (where.startsWith(t.root + '/')) seen.inside++;
      else seen.escaped.push(where);
    }
  } finally {
    swapper.kill('SIGKILL');
    await client.close();
    t.cleanup();
  }
  console.log(`# cwd race: ${seen.inside} started inside, ${seen.refused} refused, ${seen.escaped.length} escaped`);
  assert.deepEqual(seen.escaped, []);
  assert.ok(seen.inside > 0, 'no run started at all: the race was not exercised');
});

/** An agent whose setsid daemon left its tree; after close(), `check(daemon)`. */
async function detachedDaemon(keepDetached, check) {
  const mark = randomUUID();
  try {
    const client = new AcpClient({
      ...SCALED_TIMEOUTS,
      command: 'sh',
      args: [
        '-c',
        `setsid sh -c 'sleep 1000 & exit'; exec ${JSON.stringify(process.execPath)} ${JSON.stringify(MOCK_AGENT)}`,
      ],
      env: { ACP_TREE_MARK: mark },
      keepDetached,
    });
    await client.initialize();
    const [daemon] = marked(mark).filter((p) => p.cmd === 'sleep');
    assert.ok(daemon, 'the daemon runs');
    await client.close();
    await check(daemon, mark);
  } finally {
    // Only what still carries our mark (a pid alone could be reused by now).
    for (const p of marked(mark)) killOurs(p.pid);
  }
}

test("keepDetached: the agent's setsid daemon outlives close()", linuxOnly, async () => {
  await detachedDaemon(true, (daemon) => assert.equal(alive(daemon.pid), true, 'kept'));
});

test("by default the agent's setsid daemon goes with close()", {
  ...linuxOnly,
  skip: linuxOnly.skip || NO_SUBREAPER,
}, async () => {
  await detachedDaemon(false, async (_, mark) =>
    assert.notEqual(await survivorsGone(mark, -1), -1, 'the daemon survived'),
  );
});

test('a bare command missing from PATH: ERR_ACP_SPAWN ENOENT names the PATH searched', linuxOnly, () => {
  const path = '/nonexistent-a:/nonexistent-b';
  assert.throws(
    () => new AcpClient({ command: 'no-such-agent-xyz', env: { PATH: path } }),
    (err) => {
      assert.equal(err.code, 'ERR_ACP_SPAWN');
      assert.equal(err.errno, 'ENOENT');
      assert.match(err.message, /no-such-agent-xyz/);
      assert.ok(err.message.includes(`PATH ${path}`), err.message);
      return true;
    },
  );
});

// What the reaper runs can stop it or kill it (same user). Stopped, it
// must not keep close()/kill()/terminal release from killing the tree;
// killed, the exit report says so and names what may have escaped.
const node = JSON.stringify(process.execPath);
// Waits until the reaper has told the host the command started: it then
// closes its fd 7 (the exec check's pipe), so the stop cannot land before
// and be undone by the host's start check. (Not its unmapped heaps: under
// qemu-user the maps are the emulator's, whose [heap] stays.)
const startReported = `while [ -e /proc/$PPID/fd/7 ]; do sleep 0.01; done;`;
const joinReaper = `${startReported} perl -e '$SIG{TERM} = "IGNORE"; exec { "sleep" } setpgrp(0, $ARGV[0]) ? "joined" : "refused", 1000' $PPID &`;
const STOPPERS = {
  // Stops its reaper once, after a helper tried to join the reaper's group.
  once: `${joinReaper} kill -STOP $PPID;`,
  // A helper stops the reaper again and again (until it is killed).
  loop: `${startReported} perl -e '$SIG{TERM} = "IGNORE"; 1 while kill "STOP", $ARGV[0]' $PPID &`,
};

/** The state letter of `pid` (/proc/<pid>/stat), or null. */
const stateOf = (pid) => procStat(pid)?.[0] ?? null;
const ppidOf = (pid) => Number(procStat(pid)?.[1]);

for (const [stopper, script] of Object.entries(STOPPERS)) {
  for (const how of ['close', 'kill']) {
    test(`${how}() settles and leaves no survivor when the agent stops its reaper (${stopper})`, {
      ...linuxOnly,
      timeout: 60_000 * TIME_SCALE,
    }, async () => {
      const mark = randomUUID();
      const client = new AcpClient({
        ...SCALED_TIMEOUTS,
        command: 'sh',
        args: ['-c', `${script} exec ${node} ${JSON.stringify(MOCK_AGENT)} --ignore-eof --ignore-sigterm`],
        env: { ACP_TREE_MARK: mark },
        closeGraceMs: 100,
        termGraceMs: 100,
      });
      try {
        await client.initialize();
        const reaper = ppidOf(client.pid);
        await eventually(() => stateOf(reaper) === 'T', 'the reaper is stopped');
        const exited = new Promise((resolve) => client.once('exit', resolve));
        if (how === 'close') await client.close();
        else client.kill();
        const info = await exited;
        assert.equal(info.signal, 'SIGKILL', JSON.stringify(info));
        assert.notEqual(await survivorsGone(mark, -1), -1, `survivors: ${JSON.stringify(marked(mark))}`);
      } finally {
        for (const p of marked(mark)) killOurs(p.pid);
        client.kill();
      }
    });
  }
}

for (const [stopper, script] of Object.entries(STOPPERS)) {
  for (const how of ['release', 'kill']) {
    test(`terminal/${how} kills a terminal whose command stops its reaper (${stopper})`, {
      ...linuxOnly,
      timeout: 60_000 * TIME_SCALE,
    }, async () => {
      const mark = randomUUID();
      const t = tempTree(`stopped-term-${stopper}-${how}`);
      const { client, run } = await builtinSession({ terminals: true }, t.root);
      try {
        const env = [{ name: 'ACP_TREE_MARK', value: mark }];
        const command = `trap '' TERM; ${script} echo ready; sleep 1000`;
        await run(`term:${termArg({ command: 'sh', args: ['-c', command], env })} term-until:ready`);
        const [shell] = marked(mark).filter((p) => p.cmd === 'sh');
        assert.ok(shell, 'the terminal runs');
        await eventually(() => stateOf(shell.ppid) === 'T', 'its reaper is stopped');
        await run(`term-${how}`);
        assert.notEqual(await survivorsGone(mark, -1), -1, `survivors: ${JSON.stringify(marked(mark))}`);
      } finally {
        for (const p of marked(mark)) killOurs(p.pid);
        await client.close();
        t.cleanup();
      }
    });
  }
}

test('an agent that kills its reaper: the exit report says so and names what may have escaped', linuxOnly, async () => {
  const mark = randomUUID();
  // A setsid daemon and a background child, then the reaper is SIGKILLed
  // (which takes the agent along).
  const client = new AcpClient({
    ...SCALED_TIMEOUTS,
    command: 'sh',
    args: ['-c', `${startReported} setsid sh -c 'sleep 1000 & exit'; sleep 1000 & kill -KILL $PPID; exec cat`],
    env: { ACP_TREE_MARK: mark },
  });
  try {
    client.ref(); // nothing else keeps the test alive until the exit
    const info = await client.closed;
    const sleeps = () => marked(mark).filter((p) => p.cmd === 'sleep');
    // (Forked before the kill; their exec may land just after.)
    await eventually(() => sleeps().length === 2, 'the daemon and the background child outlived the reaper');
    const left = sleeps();
    assert.equal(info.reaper?.state, 'killed', JSON.stringify(info));
    assert.equal(info.reaper.signal, 'SIGKILL');
    const named = info.reaper.escaped.map((e) => e.pid);
    for (const p of left)
      assert.ok(named.includes(p.pid), `${p.pid} (${p.cmd}) is named: ${JSON.stringify(info.reaper.escaped)}`);
    assert.ok(info.reaper.escaped.every((e) => typeof e.command === 'string'));
  } finally {
    for (const p of marked(mark)) killOurs(p.pid);
    client.kill();
  }
});
