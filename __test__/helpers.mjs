import { existsSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { AcpClient } from '../index.mjs';

/**
 * How much slower than native this run is: set by scripts/platform-test.mjs
 * under an emulator (qemu-user, Wine). Scales the guards against a hang
 * only, never a timing assertion.
 */
export const TIME_SCALE = Number(process.env.ACP_TEST_TIME_SCALE) || 1;

/** The emulator this run is under ('qemu-user', 'wine'; set by scripts/platform-test.mjs), else undefined. */
export const EMULATOR = process.env.ACP_TEST_EMULATOR || undefined;

/**
 * A skip reason under an emulator for a test whose workload is sized for
 * native speed and whose code is the same on every platform; false natively.
 */
export function nativeOnly(why) {
  return EMULATOR
    ? `${why}: too slow under ${EMULATOR}; runs natively (Linux x64, the release workflow's runners)`
    : false;
}

/**
 * The library's own default timeouts of `initialize` and of requests,
 * stretched by TIME_SCALE (nothing natively): spread under a test's own
 * options wherever a test starts a client, so that an emulated agent is
 * not given up on for its speed.
 */
export const SCALED_TIMEOUTS = (() => {
  if (TIME_SCALE === 1) return {};
  const defaults = createRequire(import.meta.url)('../lib/options.js').normalize({ command: 'x' });
  return Object.fromEntries(
    ['initializeTimeoutMs', 'requestTimeoutMs'].map((k) => [k, defaults[k] && defaults[k] * TIME_SCALE]),
  );
})();

/** A fresh directory, removed after the test `t`. */
export function scratchDir(t, prefix) {
  const dir = mkdtempSync(join(tmpdir(), `acp-${prefix}-`));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

export const MOCK_AGENT = fileURLToPath(new URL('../mock-agent/agent.mjs', import.meta.url));
export const HOSTILE_AGENT = fileURLToPath(new URL('./fixtures/hostile-agent.mjs', import.meta.url));

/** A client on a fresh mock agent process. */
export function mockClient(options = {}, agentArgs = []) {
  return new AcpClient({ command: process.execPath, args: [MOCK_AGENT, ...agentArgs], ...SCALED_TIMEOUTS, ...options });
}

/** Client + initialize + session/new; collects every session/update. */
export async function mockSession(options = {}, agentArgs = []) {
  const updates = [];
  const client = mockClient(
    {
      ...options,
      onSessionUpdate: (p) => {
        updates.push(p.update);
        options.onSessionUpdate?.(p);
      },
    },
    agentArgs,
  );
  await client.initialize();
  const { sessionId } = await client.newSession();
  return { client, sessionId, updates };
}

/** The texts of the agent_message_chunk updates, joined. */
export function agentText(updates) {
  return updates
    .filter((u) => u.sessionUpdate === 'agent_message_chunk')
    .map((u) => u.content.text)
    .join('');
}

/** What the mock reported for a `kind=` line (permission=, ext=, request=). */
export function reported(updates, kind) {
  const line = updates
    .filter((u) => u.sessionUpdate === 'agent_message_chunk' && u.content.text.startsWith(`${kind}=`))
    .at(-1);
  return line ? JSON.parse(line.content.text.slice(kind.length + 1)) : undefined;
}

/**
 * The fields of /proc/<pid>/stat after the command name (index 0 is the
 * state, 19 the start time), or null if there is no such process.
 */
export function procStat(pid) {
  // Under Wine `/proc` is the Linux host's, whose pids are not Windows pids.
  if (process.platform === 'win32') return null;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  } catch {
    return null;
  }
}

/** binfmt_misc's interpreters (qemu-user), each with whether it keeps the program's argv[0] (flag P). */
let interpreters;
function binfmtInterpreters() {
  if (interpreters) return interpreters;
  interpreters = new Map();
  const dir = '/proc/sys/fs/binfmt_misc';
  for (const name of existsSync(dir) ? readdirSync(dir) : []) {
    try {
      const entry = readFileSync(`${dir}/${name}`, 'utf8');
      const interpreter = /^interpreter (.*)$/m.exec(entry)?.[1];
      if (interpreter) interpreters.set(interpreter, /^flags: .*P/m.test(entry));
    } catch {
      // register, status: not entries
    }
  }
  return interpreters;
}

/** The kernel's /proc/<pid>/cmdline, split. */
function rawArgv(pid) {
  return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').slice(0, -1);
}

/**
 * The arguments process `pid` runs with (Linux), argv[0] first. The kernel
 * shows an emulated process (qemu-user through binfmt_misc) as its
 * interpreter, the program's file, then (flag P) its argv[0] and the rest:
 * that is undone here.
 */
export function argvOf(pid) {
  const argv = rawArgv(pid);
  const keepsArgv0 = binfmtInterpreters().get(argv[0]);
  if (keepsArgv0 === undefined) return argv;
  return keepsArgv0 ? argv.slice(2) : argv.slice(1);
}

/** The executable process `pid` runs (Linux): the emulated program, not qemu, under qemu-user. */
export function programOf(pid) {
  const argv = rawArgv(pid);
  return realpathSync(binfmtInterpreters().has(argv[0]) ? argv[1] : `/proc/${pid}/exe`);
}

/**
 * One process, not just a pid: its pid and start time (Linux). Pass it to
 * `alive()` while the process runs, so that a later process given the
 * same pid (other tests fork all the time, one rewinds ns_last_pid) is not
 * taken for it.
 */
export function identify(pid) {
  return { pid, start: procStat(pid)?.[19] ?? null };
}

/** Is this process (a pid, or an `identify()` result) still live, not a zombie? */
export function alive(target) {
  const { pid, start = null } = typeof target === 'number' ? { pid: target } : target;
  // Without /proc (macOS, Windows; under Wine it is the Linux host's) fall
  // back to signal 0, which cannot tell a zombie from a live process.
  if (process.platform === 'win32' || !existsSync('/proc/self/stat')) {
    try {
      process.kill(pid, 0);
      return true;
    } catch (err) {
      return err.code === 'EPERM';
    }
  }
  const fields = procStat(pid);
  if (!fields || fields[0] === 'Z' || fields[0] === 'X') return false;
  return start === null || fields[19] === start;
}

/** pid, parent, process group, session and state of every process, from /proc (Linux). */
export function processes() {
  const out = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const fields = procStat(name);
    if (fields) {
      out.push({
        pid: Number(name),
        state: fields[0],
        ppid: Number(fields[1]),
        pgrp: Number(fields[2]),
        sid: Number(fields[3]),
      });
    }
  }
  return out;
}

/**
 * Run `fn` with process warnings named `name` collected instead of printed
 * (a test's deliberate faults); other warnings still print. Resolves with
 * the collected warnings' messages.
 */
export async function collectWarnings(name, fn) {
  const seen = [];
  const printers = process.listeners('warning');
  const collect = (warning) => {
    if (warning.name === name) seen.push(warning.message);
    else for (const print of printers) print(warning);
  };
  process.removeAllListeners('warning');
  process.on('warning', collect);
  try {
    await fn();
    // emitWarning emits on the next tick: let the last ones arrive here.
    await new Promise((resolve) => setImmediate(resolve));
  } finally {
    process.off('warning', collect);
    for (const print of printers) process.on('warning', print);
  }
  return seen;
}

/**
 * Why esbuild cannot run here, or false: its binary is a per-platform npm
 * package, absent when node_modules was installed on another platform (the
 * Windows suite under Wine runs on Linux's node_modules).
 */
export function esbuildMissing() {
  const pkg = `@esbuild/${process.platform}-${process.arch}`;
  try {
    createRequire(import.meta.url).resolve(`${pkg}/package.json`);
    return false;
  } catch {
    return `esbuild's binary for this platform (${pkg}) is not installed: node_modules comes from npm ci on another platform`;
  }
}
