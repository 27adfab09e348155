// One attack in a fresh host process (so peak RSS is this attack's):
//   node bench/attack-one.mjs <attack>
// Two agents on one host: a victim streaming a small update every ms and a
// hostile agent (__test__/fixtures/hostile-agent.mjs) attacking. Prints
// one JSON object: the host's peak RSS growth (VmHWM, Linux) during the
// attack and the victim's worst delivery delay (wall clock, agent's write
// to the host's handler), plus what the attack got back.
import {
  closeSync,
  ftruncateSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { AcpClient, SessionStore, resultCut } from '../index.mjs';

const HOSTILE = fileURLToPath(new URL('../__test__/fixtures/hostile-agent.mjs', import.meta.url));
const MiB = 1024 * 1024;
const name = process.argv[2];
const dir = mkdtempSync(join(tmpdir(), 'acp-attack-'));
const now = () => performance.timeOrigin + performance.now();
const status = (key) =>
  Number(new RegExp(`${key}:\\s+(\\d+)`).exec(readFileSync('/proc/self/status', 'utf8'))[1]) / 1024;

// Documented budget (docs/limits.md) each attack runs into, MiB.
const ATTACKS = {
  'terminal output 16 MiB of \\x01 × 40 requests': {
    budget: 2 * 7 * 16 + 2 * 16 + 64, // jobs, buffers, write queue
    options: { terminals: { maxOutputByteLimit: 16 * MiB } },
    async run(ask, sid) {
      const create = await ask('terminal/create', {
        sessionId: sid,
        command: process.execPath,
        args: ['-e', `process.stdout.write(Buffer.alloc(${16 * MiB}, 1)); setTimeout(() => {}, 60000)`],
        outputByteLimit: 16 * MiB,
      });
      const terminalId = create.sample[0].result.terminalId;
      // Until the command has written its 16 MiB (replies over 4 KiB are
      // summarized as "result:big" by the fixture).
      for (let i = 0; i < 100; i++) {
        const probe = await ask('terminal/output', { sessionId: sid, terminalId });
        if (probe.results['result:big']) break;
        await sleep(100);
      }
      await sleep(200);

      return ask('terminal/output', { sessionId: sid, terminalId }, { count: 40 });
    },
  },
  '60k wait_for_exit + 60k unknown cancels': {
    budget: 2 + 4,
    options: { terminals: true },
    async run(ask, sid, attack) {
      const create = await ask('terminal/create', { sessionId: sid, command: 'sleep', args: ['60'] });
      const terminalId = create.sample[0].result.terminalId;
      const r = await ask(
        'terminal/wait_for_exit',
        { sessionId: sid, terminalId },
        { count: 60000, waitFor: 60000 - 1024, cancelUnknown: 60000 },
      );
      await attack('hold', {});
      return r;
    },
  },
  '1000 unknown updates of 1 MiB into a session view': {
    // The view's documented bound (docs/views.md, "Limits"): about
    // 2 × maxTotalBytes (64 MiB default) + one line; plus the event queue.
    budget: 2 * 64 + 1 + 2,
    async run(_ask, sid, attack, view) {
      view(sid);
      return attack('updates', { sessionId: sid, count: 1000, bytes: MiB });
    },
  },
  '20k permission requests (16 KiB) to a handler that waits': {
    budget: 32 + 2,
    options: {},
    async run(ask, sid) {
      const params = {
        sessionId: sid,
        toolCall: { toolCallId: 't', title: 'x' },
        options: [{ optionId: 'allow', name: 'Allow', kind: 'allow_once' }],
        pad: 'p'.repeat(16 * 1024),
      };
      return ask('session/request_permission', params, { count: 20000, waitFor: 20000 - 1024 });
    },
  },
  '40 concurrent reads of 10 MiB of U+0001': {
    budget: 2 * 7 * 10 + 64, // jobs, write queue
    options: { fs: true },
    setup() {
      writeFileSync(join(dir, 'ctl.txt'), Buffer.alloc(10 * MiB, 1));
    },
    run: (ask, sid) => ask('fs/read_text_file', { sessionId: sid, path: 'ctl.txt' }, { count: 40 }),
  },
  '40 released setsid writers (8 MiB each)': {
    budget: 2 * 64,
    options: { terminals: { maxTerminals: 4 } },
    async run(ask, sid) {
      const marker = `acp-attack-${process.pid}`;
      const results = {};
      for (let i = 0; i < 40; i++) {
        const c = await ask('terminal/create', {
          sessionId: sid,
          command: 'setsid',
          args: ['-f', 'sh', '-c', 'head -c 8388608 /dev/zero; sleep 30', marker],
          outputByteLimit: 16 * MiB,
        });
        const terminalId = c.sample[0].result?.terminalId;
        if (!terminalId) {
          results.refused = (results.refused ?? 0) + 1;
          continue;
        }
        await ask('terminal/wait_for_exit', { sessionId: sid, terminalId });
        await ask('terminal/release', { sessionId: sid, terminalId });
        results.released = (results.released ?? 0) + 1;
      }
      await sleep(1000);
      killMarked(marker);
      return { results };
    },
  },
  '300 MiB of stderr': {
    budget: 2,
    options: {},
    run: (_ask, _sid, attack) => attack('stderr', { bytes: 300 * MiB }),
  },
  'line 2 of a 1 TiB sparse file × 4': {
    budget: 4,
    options: { fs: true },
    setup() {
      const fd = openSync(join(dir, 'sparse.bin'), 'w');
      ftruncateSync(fd, 2 ** 40);
      closeSync(fd);
    },
    run: (ask, sid) => ask('fs/read_text_file', { sessionId: sid, path: 'sparse.bin', line: 2 }, { count: 4 }),
  },
  '8 MiB write then $/cancel_request × 10': {
    // Pending request bytes, plus two jobs each holding its params and
    // the decoded content.
    budget: 32 + 2 * 2 * 8,
    options: { fs: true },
    async run(ask, sid) {
      const results = {};
      for (let i = 0; i < 10; i++) {
        writeFileSync(join(dir, 'w.txt'), 'old');
        // The agent makes its 8 MiB: building it here would stall the
        // host's JS thread (JSON.stringify of it alone is a long stall),
        // which is the driver's cost, not the attack's.
        const r = await ask(
          'fs/write_text_file',
          { sessionId: sid, path: 'w.txt' },
          { cancel: true, fill: { key: 'content', bytes: 8 * MiB } },
        );
        const replaced = statSync(join(dir, 'w.txt')).size !== 3;
        const kind = `${Object.keys(r.results)[0]}${replaced ? ' (replaced)' : ''}`;
        results[kind] = (results[kind] ?? 0) + 1;
      }
      return { results };
    },
  },
  '100 terminal/create + release in a host of 500 MB': {
    // Starting a process forks the host: tens of ms for a big one (an
    // editor's extension host), which must not stall the other agents.
    budget: 8,
    options: { terminals: true },
    setup() {
      globalThis.ballast = Buffer.alloc(500 * MiB, 1);
    },
    async run(ask, sid) {
      const results = {};
      for (let i = 0; i < 100; i++) {
        const c = await ask('terminal/create', { sessionId: sid, command: 'sleep', args: ['60'] });
        const terminalId = c.sample[0].result?.terminalId;
        results[terminalId ? 'created' : 'refused'] = (results[terminalId ? 'created' : 'refused'] ?? 0) + 1;
        if (terminalId) await ask('terminal/release', { sessionId: sid, terminalId });
      }
      return { results };
    },
  },
  '57 MB tool_call line (rawInput [0,0,…]) into a session view': {
    // The line (read, then held by the reader while it is folded) and the
    // view's bound (docs/limits.md): the rawInput becomes a marker.
    budget: 2 * 57 + 2,
    async run(_ask, sid, attack, view) {
      view(sid);
      const head = `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"${sid}","update":{"sessionUpdate":"tool_call","toolCallId":"big","title":"Big","rawInput":[0`;
      await attack('raw', { lines: [{ head, repeat: ',0', times: 28_500_000, tail: ']}}}' }] });
      return { toolCall: globalThis.views[sid].snapshot().toolCalls.big };
    },
  },
  '60 MB permission request (rawInput [0,0,…]) pending, with a session view': {
    // The line while it is read and framed, and its params kept with the
    // pending request; the handler's params and the view hold markers.
    budget: 2 + 2 * 60,
    async run(_ask, sid, attack, view) {
      view(sid);
      const head = `{"jsonrpc":"2.0","id":$ID,"method":"session/request_permission","params":{"sessionId":"${sid}","options":[{"optionId":"a","name":"Allow","kind":"allow_once"}],"toolCall":{"toolCallId":"big","title":"Big","rawInput":[0`;
      // Answered only when the handler is (never, here).
      attack('raw', { ask: true, lines: [{ head, repeat: ',0', times: 30_000_000, tail: ']}}}' }] }).catch(() => {});
      await handed;
      return { pendingInView: globalThis.views[sid].snapshot().pending.map((p) => p.params.toolCall.rawInput) };
    },
  },
  '60 MB permission request (rawInput [0,0,…]) to a handler that waits': {
    budget: 2 + 2 * 60,
    run: permissionOf60MB,
  },
  '60 MB permission request to a handler that waits, params whole (maxHandlerParamsBytes: Infinity)': {
    // What every handler got before params were cut: V8's parse of the
    // line (up to ~12 × its bytes while parsing an array of small numbers).
    budget: 2 + 2 * 60 + 12 * 60,
    options: { maxHandlerParamsBytes: Number.POSITIVE_INFINITY },
    run: permissionOf60MB,
  },
  '21 MB session/load result with a session view': {
    // The line, and its full text kept with the result (cut for the
    // caller); the view a marker of `_meta.pad`.
    budget: 2 + 2 * 21,
    run: loadOf21MB,
  },
  '21 MB session/load result with a session view, result whole (maxResultBytes: Infinity)': {
    // What every caller got before results were cut: V8's parse of it
    // (~12 × its bytes while parsing).
    budget: 2 + 12 * 21,
    options: { maxResultBytes: Number.POSITIVE_INFINITY },
    run: loadOf21MB,
  },
  '4 concurrent reads of 10 MiB of U+0001 × 5': {
    budget: 2 * 7 * 10 + 64,
    options: { fs: true },
    setup() {
      writeFileSync(join(dir, 'ctl.txt'), Buffer.alloc(10 * MiB, 1));
    },
    async run(ask, sid) {
      const results = {};
      for (let i = 0; i < 5; i++)
        tally(results, await ask('fs/read_text_file', { sessionId: sid, path: 'ctl.txt' }, { count: 4 }));
      return { results };
    },
  },
  'terminal output 16 MiB of \\x01\\xff × 4 × 3': {
    budget: 2 * 7 * 16 + 2 * 16 + 64,
    options: { terminals: { maxOutputByteLimit: 16 * MiB } },
    async run(ask, sid) {
      const create = await ask('terminal/create', {
        sessionId: sid,
        command: process.execPath,
        args: [
          '-e',
          `const b = Buffer.alloc(${16 * MiB}, 1); for (let i = 1; i < b.length; i += 2) b[i] = 0xff; process.stdout.write(b); setTimeout(() => {}, 60000)`,
        ],
        outputByteLimit: 16 * MiB,
      });
      const terminalId = create.sample[0].result.terminalId;
      await untilBig(ask, { sessionId: sid, terminalId });
      const results = {};
      for (let i = 0; i < 3; i++)
        tally(results, await ask('terminal/output', { sessionId: sid, terminalId }, { count: 4 }));
      return { results };
    },
  },
  'line and limit 2^53 of a 1 TiB sparse file × 4': {
    budget: 4,
    options: { fs: true },
    setup() {
      const fd = openSync(join(dir, 'sparse.bin'), 'w');
      ftruncateSync(fd, 2 ** 40);
      closeSync(fd);
    },
    run: (ask, sid) =>
      ask('fs/read_text_file', { sessionId: sid, path: 'sparse.bin', line: 2 ** 53, limit: 2 ** 53 }, { count: 4 }),
  },
  'snapshot() of a 64 MiB \\u0001 view while it streams': {
    // The view (2 × 64 MiB), the event queue, and a snapshot's copy.
    budget: 2 * 64 + 2 + 64,
    async run(_ask, sid, attack, view) {
      const v = view(sid);
      // 2048 chunks of 64 KiB, a new message every 2 MiB: the view holds
      // its 64 MiB cap of text, then the oldest messages go.
      const streaming = attack('updates', {
        sessionId: sid,
        count: 2048,
        bytes: 64 * 1024,
        text: '\u0001',
        perMessage: 32,
      });
      const { calls, worstMs } = await timedWhile(streaming, 250, () => v.snapshot());
      return { results: { snapshots: calls, worstSnapshotMs: worstMs } };
    },
  },
  'a 64 MiB recorded view (session store on) while another agent streams': {
    // The view (2 × 64 MiB), the event queue, and the store's copy of it
    // as JSON (docs/limits.md: six bytes a control character).
    budget: 2 * 64 + 2 + 6 * 64,
    async setup() {
      this.options = { store: await SessionStore.open(join(dir, 'store')) };
    },
    async run(_ask, sid, attack) {
      // The session is recorded: its view, copied by the store's writer
      // (every 250 ms at most) while the same stream as the snapshot()
      // row fills it; the host's view drains it as a UI would.
      await attack('updates', { sessionId: sid, count: 2048, bytes: 64 * 1024, text: '\u0001', perMessage: 32 });
      const { store } = this.options;
      await store.flush();
      const { viewsWritten, coalesced, errors } = store.stats();
      return { results: { viewsWritten, coalesced, errors } };
    },
  },
  'history() of a full ring during a flood': {
    // The queue, and the ring (2000 records of up to 4 KiB).
    budget: 2 + 8,
    async run(_ask, sid, attack) {
      const flooding = attack('updates', { sessionId: sid, count: 20000, bytes: 8 * 1024 });
      const { calls, worstMs } = await timedWhile(flooding, 100, () => hostile.history());
      return { results: { calls, worstHistoryMs: worstMs } };
    },
  },
  'none (baseline)': { budget: 0, options: {}, run: () => sleep(1000) },
};

/** Until `running` settles, every `everyMs`: `call()`, timed. */
async function timedWhile(running, everyMs, call) {
  let done = false;
  void running.then(() => (done = true));
  let worst = 0;
  let calls = 0;
  while (!done) {
    await sleep(everyMs);
    const t = performance.now();
    call();
    worst = Math.max(worst, performance.now() - t);
    calls++;
  }
  return { calls, worstMs: Math.round(worst) };
}

/** A session/load answered with 21 MB of `_meta.pad: [0,0,…]`; what the caller got. */
async function loadOf21MB(_ask, sid, _attack, view, client) {
  view(sid);
  const result = await client.loadSession({ sessionId: sid, cwd: dir, _meta: { zeros: 10_500_000 } });
  const pad = result._meta.pad;
  return {
    modes: result.modes.currentModeId,
    cut: resultCut(result),
    pad: Array.isArray(pad) ? `${pad.length} elements` : pad,
  };
}

/** A 60 MB permission request the handler never answers; what it got. */
async function permissionOf60MB(_ask, sid, attack) {
  const head = `{"jsonrpc":"2.0","id":$ID,"method":"session/request_permission","params":{"sessionId":"${sid}","options":[{"optionId":"a","name":"Allow","kind":"allow_once"}],"toolCall":{"toolCallId":"big","title":"Big","rawInput":[0`;
  attack('raw', { ask: true, lines: [{ head, repeat: ',0', times: 30_000_000, tail: ']}}}' }] }).catch(() => {});
  await handed;
  const { params, paramsCut } = globalThis.permission;
  const raw = params.toolCall.rawInput;
  return { results: { paramsCut, rawInput: Array.isArray(raw) ? `${raw.length} elements` : raw } };
}

/** Add an ask's answer kinds to `results`. */
function tally(results, got) {
  for (const [k, n] of Object.entries(got.results)) results[k] = (results[k] ?? 0) + n;
}

/** Until a terminal's output is over 4 KiB (the fixture summarizes such replies as "result:big"). */
async function untilBig(ask, params) {
  for (let i = 0; i < 100; i++) {
    const probe = await ask('terminal/output', params);
    if (probe.results['result:big']) break;
    await sleep(100);
  }
  await sleep(200);
}

/** SIGKILL the groups of the writers that escaped with `setsid` (ours: by marker). */
function killMarked(marker) {
  for (const n of readdirSync('/proc')) {
    if (!/^\d+$/.test(n)) continue;
    try {
      if (readFileSync(`/proc/${n}/cmdline`, 'utf8').split('\0').includes(marker)) process.kill(-Number(n), 'SIGKILL');
    } catch {
      // gone meanwhile
    }
  }
}

const attack = ATTACKS[name];
if (!attack) {
  console.error(`unknown attack; one of:\n${Object.keys(ATTACKS).join('\n')}`);
  process.exit(2);
}
await attack.setup?.();

// The victim: delivery delays of its ticks while the attack runs.
let worst = 0;
let ticks = 0;
let measuring = false;
const victim = new AcpClient({
  command: process.execPath,
  args: [HOSTILE],
  fs: true,
  // Enough to keep the attack's reads (among its ticks, one a ms).
  historySize: 20000,
  onNotification: (params, { method }) => {
    if (method !== '_stream/tick' || !measuring) return;
    ticks++;
    worst = Math.max(worst, now() - params.t);
  },
});
await victim.initialize();
const { sessionId: victimSession } = await victim.newSession({ cwd: dir });
writeFileSync(join(dir, 'victim.txt'), 'a small file\n');
// The victim's built-in reads while the attack runs: its agent asks, the
// core reads and answers, the agent tells the host (the round trip).
let readWorst = 0;
let reads = 0;
let readErrors = 0;
async function victimReads() {
  while (measuring) {
    const t = performance.now();
    const got = await victim.request(
      '_attack/ask',
      { method: 'fs/read_text_file', params: { sessionId: victimSession, path: 'victim.txt' } },
      { timeoutMs: 0 },
    );
    if (!measuring) break;
    if (!got.results.result) readErrors++;
    readWorst = Math.max(readWorst, performance.now() - t);
    reads++;
    await sleep(10);
  }
}

// A permission request reached the host's handler.
let handedOver;
const handed = new Promise((resolve) => (handedOver = resolve));
const hostile = new AcpClient({
  command: process.execPath,
  args: [HOSTILE],
  handlers: {
    'session/request_permission': (params, { signal, paramsCut }) => {
      globalThis.permission = { params, paramsCut };
      handedOver();
      return new Promise((resolve) =>
        signal.addEventListener('abort', () => resolve({ outcome: { outcome: 'cancelled' } })),
      );
    },
  },
  ...attack.options,
});
await hostile.initialize();
const { sessionId } = await hostile.newSession({ cwd: dir });
const call = (method, params) => hostile.request(`_attack/${method}`, params, { timeoutMs: 0 });
const ask = (method, params, more = {}) => call('ask', { method, params, count: 1, ...more });

const stream = victim.request('_attack/stream', { ms: 600_000 }, { timeoutMs: 0 }).catch(() => {});
await sleep(300); // the stream is flowing
globalThis.gc?.();
const base = status('VmRSS');
writeFileSync('/proc/self/clear_refs', '5');
// The host's own event-loop stalls: a victim delay the JS thread explains
// (the bench's driver shares it) versus one from the core.
const loop = monitorEventLoopDelay({ resolution: 1 });
loop.enable();
measuring = true;
const reading = victimReads();
const t0 = performance.now();
// A UI on the hostile session, when the attack needs one: it reads every
// change (what a renderer does) and keeps nothing.
let changes = 0;
globalThis.views = {};
const openView = (sid) => (globalThis.views[sid] = hostile.session(sid).on('change', () => changes++));
const got = await attack.run(ask, sessionId, call, openView, hostile);
const ms = performance.now() - t0;
await sleep(100); // deliveries delayed by the attack's tail
measuring = false;
await reading;
// The victim's reads inside the host: request read to reply sent (the
// core's wait for a turn and the job), apart from the agents' side.
const hostRead = Math.max(
  0,
  ...victim
    .history()
    .filter((r) => r.kind === 'response' && r.method === 'fs/read_text_file')
    .map((r) => r.durationMs),
);
loop.disable();
const growth = status('VmHWM') - base;
if (ticks === 0) {
  // No tick measured means the victim's delay is unknown, not zero.
  console.error(`${name}: the victim delivered no ticks while measuring`);
  process.exit(3);
}

console.log(
  JSON.stringify({
    attack: name,
    budgetMB: attack.budget,
    rssGrowthMB: Math.round(growth),
    worstDelayMs: Math.round(worst * 10) / 10,
    ticks,
    readWorstMs: Math.round(readWorst * 10) / 10,
    readInHostMs: Math.round(hostRead * 10) / 10,
    reads,
    readErrors,
    loopStallMs: Math.round(loop.max / 1e5) / 10,
    attackMs: Math.round(ms),
    answers: got?.results ?? (changes > 0 ? { ...got, changeEvents: changes } : got),
  }),
);
hostile.kill();
victim.kill();
void stream;
rmSync(dir, { recursive: true, force: true });
process.exit(0);
