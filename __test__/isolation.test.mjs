// One agent cannot starve another's built-in requests: every request gets
// an answer even when the host can start no thread.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { tempTree } from './builtin-helpers.mjs';
import { TIME_SCALE } from './helpers.mjs';

const PIDS_HOST = fileURLToPath(new URL('./fixtures/pids-host.mjs', import.meta.url));

/** A fresh pids cgroup, or why there can be none here. */
function pidsCgroup() {
  if (process.platform !== 'linux') return { skip: 'pids cgroups are Linux only' };
  if (process.getuid?.() !== 0) return { skip: 'making a pids cgroup needs root' };
  const v1 = '/sys/fs/cgroup/pids';
  const v2 = '/sys/fs/cgroup';
  let root;
  if (existsSync(`${v1}/tasks`)) root = v1;
  else if (existsSync(`${v2}/cgroup.controllers`) && readFileSync(`${v2}/cgroup.controllers`, 'utf8').includes('pids'))
    root = v2;
  else return { skip: 'no pids cgroup controller mounted' };
  const path = `${root}/acp-native-test-${process.pid}`;
  try {
    mkdirSync(path);
  } catch (err) {
    return { skip: `cannot make a pids cgroup (${err.code})` };
  }
  if (!existsSync(`${path}/pids.max`)) {
    rmdirSync(path);
    return { skip: 'the pids controller is not enabled for new cgroups' };
  }
  return { path };
}

test('with no thread to be had, a built-in read is answered with a typed error', async (t) => {
  const cg = pidsCgroup();
  if (cg.skip) {
    t.skip(cg.skip);
    return;
  }
  const tree = tempTree('pids');
  try {
    const out = execFileSync(process.execPath, [PIDS_HOST, tree.root], {
      encoding: 'utf8',
      env: { ...process.env, ACP_PIDS_CGROUP: cg.path },
      timeout: 60_000 * TIME_SCALE,
    });
    const got = JSON.parse(out.trim().split('\n').at(-1));
    assert.equal(got.timedOut, undefined, `the read got no answer: ${JSON.stringify(got)}`);
    assert.equal(got.answered, 1);
    // No pool thread existed and none could start: refused, not lost.
    assert.deepEqual(got.results, { 'error:-32603:noThread': 1 });
  } finally {
    tree.cleanup();
    await removeCgroup(cg.path);
  }
});

/**
 * Remove the test's cgroup once it is empty: what the host started may
 * still be exiting when it returns (rmdir says EBUSY meanwhile). Anything
 * left in it is the test's own, so it is killed.
 */
async function removeCgroup(path) {
  for (let i = 0; ; i++) {
    try {
      rmdirSync(path);
      return;
    } catch (err) {
      if (err.code !== 'EBUSY' || i >= 200) throw err;
    }
    for (const pid of readFileSync(join(path, 'cgroup.procs'), 'utf8').split('\n').filter(Boolean)) {
      try {
        process.kill(Number(pid), 'SIGKILL');
      } catch {}
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
