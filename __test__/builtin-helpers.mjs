// Helpers for the built-in fs/terminal tests: temporary trees, scripts for
// the mock agent's fs/terminal commands, and /proc process-group scans.
import {
  lstatSync,
  mkdtempSync,
  mkdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { mockClient, processes, reported, TIME_SCALE } from './helpers.mjs';

export const enc = encodeURIComponent;

/** `term:` argument: a CreateTerminalRequest without sessionId. */
export const termArg = (params) => enc(JSON.stringify(params));

/** dir/root (the session cwd) and dir/outside; removed by `cleanup()`. */
export function tempTree(name) {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), `acp-${name}-`)));
  const root = join(dir, 'root');
  const outside = join(dir, 'outside');
  mkdirSync(root);
  mkdirSync(outside);
  return { dir, root, outside, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

/** A client with the given built-ins and a session whose cwd is `cwd`. */
export async function builtinSession(options, cwd) {
  const updates = [];
  const client = mockClient({ ...options, onSessionUpdate: (p) => updates.push(p.update) });
  const init = await client.initialize();
  const { sessionId } = await client.newSession({ cwd });
  /** Run a script; returns what the agent reported for `kind`. */
  const run = async (script, kind) => {
    await client.prompt({ sessionId, prompt: script });
    return kind === undefined ? undefined : reported(updates, kind);
  };
  return { client, sessionId, updates, init, run };
}

/** Live (non-zombie) processes in process group `pgid`. */
export function groupMembers(pgid) {
  return processes().filter((p) => p.pgrp === pgid && p.state !== 'Z' && p.state !== 'X');
}

/** Pids of live processes whose command line contains `marker`. */
export function pidsWithArg(marker) {
  const pids = [];
  for (const { pid, state } of processes()) {
    if (state === 'Z' || state === 'X') continue;
    try {
      if (readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').includes(marker)) pids.push(pid);
    } catch {
      // gone meanwhile
    }
  }
  return pids;
}

/** Poll until `check()` is true; a generous deadline guards against a hang only. */
export async function eventually(check, what, ms = 15_000 * TIME_SCALE) {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (check()) return;
    await sleep(25);
  }
  if (!check()) throw new Error(`never happened: ${what}`);
}

/**
 * Why symlinks of `type` ('file', 'dir', 'junction') cannot be made and
 * read back here, or false. Wine 8 makes file and directory links it then
 * cannot open, and no junctions; Windows without the privilege makes none.
 */
export function linksMissing(type = 'file') {
  const dir = mkdtempSync(join(tmpdir(), 'acp-link-probe-'));
  try {
    const target = join(dir, 'target');
    if (type === 'file') writeFileSync(target, 'x');
    else mkdirSync(target);
    symlinkSync(target, join(dir, 'link'), type);
    return lstatSync(join(dir, 'link')).isSymbolicLink()
      ? false
      : `a ${type} link is made but is not a link when read back`;
  } catch (err) {
    return `cannot make a ${type} link here (${err.code})`;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
