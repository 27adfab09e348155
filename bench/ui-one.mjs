// One "stream to a UI" measurement in a fresh process:
//   node bench/ui-one.mjs <view|native|sdk|readline|idle> [cpu|stall] [scenario]
// `scenario`: `backToBack` (the default: 200k chunks back to back across
// 10 messages, 2,000 tool_call_updates) or a realistic one of
// bench/real-turns.mjs (several prompts, one turn each).
// Prints one JSON object: metrics and the final state (canonical JSON).
// `stall` (the default) runs a 1 ms event-loop delay monitor and reports
// the worst stall; `cpu` runs none. The monitor is not free: its timer
// wakes the loop every idle millisecond, which a real host does not pay,
// and which weighs on a client in proportion to how idle its loop is (a
// loop that is always busy barely pays it). So CPU comes from `cpu` runs,
// stalls from `stall` runs.
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { createRequire } from 'node:module';
import { UI } from './scenarios.mjs';
import { REAL } from './real-turns.mjs';
import { canonical } from '../__test__/fold-gen.mjs';
const require = createRequire(import.meta.url);
const { SessionFold, applyChanges } = require('../lib/session-fold.js');
const { AcpClient } = require('../index.js');

const clientName = process.argv[2];
const mode = process.argv[3] ?? 'stall';
if (mode !== 'cpu' && mode !== 'stall') throw new Error(`mode: cpu or stall, not ${mode}`);
const scenario = process.argv[4] ?? 'backToBack';
const agentPath = fileURLToPath(new URL('./flood-agent.mjs', import.meta.url));
const realistic = scenario !== 'backToBack';
if (realistic && REAL[scenario] === undefined)
  throw new Error(`scenario: backToBack or one of ${Object.keys(REAL).join(', ')}`);
const agentArgs = realistic ? [agentPath, '--real', scenario] : [agentPath];
// The prompts of the run; each result's _meta.updates says how many
// updates it brought (the back-to-back flood: its chunks and tool events).
const scripts = realistic
  ? Array.from({ length: REAL[scenario].prompts }, (_, t) => `real:${t}`)
  : [`ui:${UI.chunks}:${UI.messages}:${UI.toolUpdates}`];
const BACK_TO_BACK_UPDATES = UI.chunks + UI.messages + UI.toolUpdates;
let updates = 0;
const counted = (result) => {
  updates += realistic ? result._meta.updates : BACK_TO_BACK_UPDATES;
  return result;
};

// A UI: each change (or update) is applied to the state the UI renders.
let run;
if (clientName === 'idle') {
  // The control: an event loop with nothing to do while an agent floods
  // the same number of lines (into /dev/null). Its worst stall is what the
  // machine alone does to a loop (other processes, the OS), the floor
  // under every client's figure.
  const { spawn } = await import('node:child_process');
  run = {
    prompt: () =>
      new Promise((resolve, reject) => {
        const child = spawn(
          process.execPath,
          [...agentArgs, '--standalone', realistic ? 'real:0' : `small:${UI.chunks}`],
          { stdio: ['ignore', 'ignore', 'pipe'] },
        );
        let report = '';
        child.stderr.on('data', (d) => (report += d));
        child.on('error', reject);
        child.on('exit', () => {
          updates = JSON.parse(report).count;
          resolve();
        });
      }),
    final: () => null,
    extra: () => ({}),
    close: () => {},
  };
} else if (clientName === 'view') {
  const client = new AcpClient({ command: process.execPath, args: agentArgs });
  await client.initialize();
  const { sessionId } = await client.newSession({ cwd: process.cwd() });
  const view = client.session(sessionId);
  let changes = 0;
  const { state } = view.subscribe((c) => {
    changes++;
    applyChanges(state, c);
  });
  run = {
    prompt: async () => {
      for (const script of scripts) counted(await client.prompt({ sessionId, prompt: script }));
    },
    final: async () => {
      // Everything the agent sent, delivered to the UI's copy.
      await view.settled();
      return state;
    },
    extra: () => ({ changeEvents: changes }),
    close: () => client.close(),
  };
} else {
  let fold;
  const onUpdate = (params) => fold.applyUpdate(params.update);
  const onPermission = () => ({ outcome: { outcome: 'cancelled' } });
  const { open } = await import(`./clients/${clientName}.mjs`);
  const conn = await open({ command: process.execPath, args: agentArgs, onUpdate, onPermission, variant: 'default' });
  const sessionId = await conn.newSession();
  fold = new SessionFold(sessionId);
  run = {
    prompt: async () => {
      for (const script of scripts) {
        fold.promptStarted();
        fold.promptEnded(counted(await conn.prompt(sessionId, script)));
      }
    },
    final: () => fold.toJSON(),
    extra: () => ({}),
    close: () => conn.close(),
  };
}

/**
 * CPU µs of thread `tid` of this process (Linux; undefined elsewhere, or
 * once it ended): from schedstat, in ns (stat's utime + stime count whole
 * clock ticks, too coarse for the per-chunk cost).
 */
function threadCpuUs(tid) {
  try {
    return Number(readFileSync(`/proc/self/task/${tid}/schedstat`, 'utf8').split(' ')[0]) / 1e3;
  } catch {
    return undefined;
  }
}

/** CPU µs of the JS (main) thread. */
const jsThreadCpuUs = () => threadCpuUs(process.pid);

/**
 * CPU µs of each thread of this process named `acp-native` (the addon's
 * runtime: the reader, the blocking pool), by thread id (empty without
 * /proc). A thread that ended meanwhile is not counted.
 */
function addonThreadsCpuUs() {
  const byTid = new Map();
  let tids = [];
  try {
    tids = readdirSync('/proc/self/task');
  } catch {
    // No /proc.
  }
  for (const tid of tids) {
    let name;
    try {
      name = readFileSync(`/proc/self/task/${tid}/comm`, 'utf8').trim();
    } catch {
      continue; // ended since the listing
    }
    const us = name === 'acp-native' ? threadCpuUs(tid) : undefined;
    if (us !== undefined) byTid.set(tid, us);
  }
  return byTid;
}

const delay = monitorEventLoopDelay({ resolution: 1 });
const addon0 = addonThreadsCpuUs();
const js0 = jsThreadCpuUs();
const cpu0 = process.cpuUsage();
const t0 = process.hrtime.bigint();
if (mode === 'stall') delay.enable();
await run.prompt();
const state = await run.final();
const finalMs = Number(process.hrtime.bigint() - t0) / 1e6;
const cpu = process.cpuUsage(cpu0);
const js1 = jsThreadCpuUs();
const addon1 = addonThreadsCpuUs();
const addonUs = [...addon1].reduce((sum, [tid, us]) => sum + us - (addon0.get(tid) ?? 0), 0);
delay.disable();
await run.close();
process.stdout.write(
  JSON.stringify({
    client: clientName,
    mode,
    finalMs,
    scenario,
    updates,
    cpuUsPerUpdate: (cpu.user + cpu.system) / updates,
    jsThreadUsPerUpdate: js0 === undefined ? undefined : (js1 - js0) / updates,
    addonThreadsUsPerUpdate: addon1.size === 0 ? undefined : addonUs / updates,
    maxStallMs: mode === 'stall' ? delay.max / 1e6 : undefined,
    peakRssMb: process.resourceUsage().maxRSS / 1024,
    entries: state?.entries.length,
    ...run.extra(),
    state: state === null ? null : canonical(state),
  }) + '\n',
);
