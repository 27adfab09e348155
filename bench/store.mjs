// `npm run bench:store`: what the session store costs and what it keeps.
//
// 1. A flood (200k small / 20k large updates) with no view, a session view,
//    and the session recorded in a store (the same view, copied by the
//    store's writer thread): wall time, CPU per message, event-loop delay.
// 2. kill -9 of the agent mid-turn, KILLS times for each way back (resume,
//    load, fresh): the recovered view must be the stored one plus what
//    followed (with load: the agent's own history plus what followed).
// 2b. The same, KILLS times, against agentao (a real agent, on the fake model).
// 3. kill -9 of the host during a flood, KILLS times: the store opens, and
//    holds at least everything the host saw committed.
// 4. A store of 10,000 sessions: list and search latency.
//
// Env: BENCH_REPEAT (3), KILLS (20). Writes bench/RESULTS-store.md.
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { AcpClient, SessionStore } from '../index.mjs';
import { PINS as PEER_PINS } from '../interop/setup-peers.mjs';

const REPEAT = Number(process.env.BENCH_REPEAT ?? 3);
const KILLS = Number(process.env.KILLS ?? 20);
const here = (p) => fileURLToPath(new URL(p, import.meta.url));
const MOCK = here('../mock-agent/agent.mjs');
const { RECORDER } = createRequire(import.meta.url)('../lib/store.js');
const out = [];
const say = (line = '') => {
  console.log(line);
  out.push(line);
};
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const scratch = () => mkdtempSync(join(os.tmpdir(), 'acp-bench-store-'));

// ---- 1. flood cost ------------------------------------------------------

function flood() {
  say('## 1. Flood: the per-message path with a recorded session');
  say();
  say(
    `Medians of ${REPEAT} fresh processes (bench/run-one.mjs, native client). CPU is the whole process (reader, writer thread, JS).`,
  );
  say();
  say('| scenario | variant | wall ms | CPU µs/msg | max loop delay ms | peak RSS MB | views written | coalesced |');
  say('|---|---|---|---|---|---|---|---|');
  for (const scenario of ['small', 'large']) {
    for (const variant of ['default', 'view', 'store']) {
      const runs = [];
      let stats = null;
      for (let i = 0; i < REPEAT; i++) {
        const r = spawnSync(process.execPath, ['--expose-gc', here('./run-one.mjs'), 'native', variant, scenario], {
          encoding: 'utf8',
          timeout: 300_000,
        });
        if (r.status !== 0) throw new Error(`run-one ${variant}/${scenario} failed: ${r.stderr}`);
        runs.push(JSON.parse(r.stdout.trim().split('\n').pop()));
        const line = r.stderr.split('\n').find((l) => l.startsWith('{"storeStats"'));
        if (line) stats = JSON.parse(line).storeStats;
      }
      const extra = stats ? `| ${stats.viewsWritten} | ${stats.coalesced} |` : '| — | — |';
      const m = (k) => median(runs.map((r) => r[k]));
      say(
        `| ${scenario} | ${variant} | ${m('wallMs').toFixed(0)} | ${m('cpuUsPerMsg').toFixed(2)} | ${m('maxLoopDelayMs').toFixed(1)} | ${m('peakRssMb').toFixed(0)} ${extra}`,
      );
    }
  }
  say();
}

// ---- 2. agent kill -9 mid-turn -----------------------------------------

const agentText = (view) =>
  (view?.entries ?? [])
    .filter((e) => e.kind === 'agent')
    .map((e) => e.content.map((b) => b.text ?? '').join(''))
    .join('');

/** The agent text the mock agent kept in its history file. */
function historyText(dir, sessionId) {
  const lines = readFileSync(join(dir, `${encodeURIComponent(sessionId)}.ndjson`), 'utf8')
    .split('\n')
    .filter(Boolean);
  return lines
    .map((l) => JSON.parse(l))
    .filter((u) => u.sessionUpdate === 'agent_message_chunk')
    .map((u) => u.content.text)
    .join('');
}

async function killOnce(flags, how) {
  const dir = scratch();
  try {
    const store = await SessionStore.open(join(dir, 'store'), { intervalMs: 5 });
    const args = [MOCK, '--sessions-dir', dir, ...flags];
    const client = await AcpClient.connect({ command: process.execPath, args, store });
    const { sessionId } = await client.newSession();
    await client.prompt({ sessionId, prompt: 'say:before' });
    const [storedId] = Object.values(client.recordedSessions());
    const turn = client.prompt({ sessionId, prompt: 'text:50000 hang' }).catch((e) => e);
    // A random point of the stream.
    await new Promise((r) => setTimeout(r, 20 + Math.random() * 150));
    process.kill(client.pid, 'SIGKILL');
    await turn;
    await client.closed;
    await store.flush();
    const stored = agentText((await store.get(storedId)).view);
    const agentKept = historyText(dir, sessionId);
    const r = await store.resume(storedId, { command: process.execPath, args });
    await r.client.prompt({ sessionId: r.sessionId, prompt: 'say:after' });
    const recovered = agentText(r.view.snapshot());
    await r.client.close();
    await store.close();
    const want = (how === 'load' ? agentKept : stored) + 'after';
    return {
      ok: r.how === how && recovered === want,
      got: r.how,
      storedChars: stored.length,
      agentChars: agentKept.length,
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function agentKills() {
  say(`## 2. kill -9 of the agent mid-turn, ${KILLS} times each`);
  say();
  say(
    'The recovered view must equal the stored view plus what followed (with `load`, the agent replays its own history: that plus what followed), each entry once.',
  );
  say();
  say('| agent offers | recovered by | equal | agent text the store lacked at the kill (chars, median) |');
  say('|---|---|---|---|');
  for (const [flags, how, label] of [
    [['--resume'], 'resume', 'session/resume'],
    [[], 'load', 'session/load'],
    [['--no-load'], 'fresh', 'neither'],
  ]) {
    let ok = 0;
    const behind = [];
    for (let i = 0; i < KILLS; i++) {
      const r = await killOnce(flags, how);
      if (r.ok) ok++;
      else console.error(`  ${how} #${i}: got ${r.got}, stored ${r.storedChars}, agent ${r.agentChars}`);
      behind.push(r.agentChars - r.storedChars);
    }
    say(`| ${label} | ${how} | ${ok} of ${KILLS} | ${median(behind)} |`);
  }
  say();
}

// ---- 2b. the same against a real agent: agentao ----------------------------

/** agentao (pinned by interop/setup-peers.mjs) on the fake model, installed if missing. */
async function agentaoLaunch() {
  const { setupPeers } = await import('../interop/setup-peers.mjs');
  const { startFakeLlm } = await import('../interop/fake-llm.mjs');
  const { agentaoEnv } = await import('../interop/helpers.mjs');
  const peers = setupPeers();
  const llm = await startFakeLlm({ lifetimeMs: 3_600_000, trickleMs: 5 });
  return {
    llm,
    options: (home, cwd) => ({
      command: peers.agentao,
      args: ['--acp', '--stdio'],
      cwd,
      env: agentaoEnv({ home, llm }),
      replaceEnv: true,
    }),
  };
}

const count = (text, part) => text.split(part).length - 1;

async function agentaoKillOnce(launch) {
  const dir = scratch();
  try {
    const home = join(dir, 'home');
    const cwd = join(dir, 'project');
    mkdirSync(home);
    mkdirSync(cwd);
    const store = await SessionStore.open(join(dir, 'store'), { intervalMs: 5 });
    const client = await AcpClient.connect({ ...launch.options(home, cwd), store });
    const { sessionId } = await client.newSession({ cwd });
    await client.prompt({ sessionId, prompt: 'say before' });
    const [storedId] = Object.values(client.recordedSessions());
    const view = client.session(sessionId);
    const turn = client.prompt({ sessionId, prompt: 'slow' }).catch((e) => e);
    // A random point of the stream, once it has started.
    while (!agentText(view.snapshot()).includes('Starting')) await new Promise((r) => setTimeout(r, 5));
    await new Promise((r) => setTimeout(r, Math.random() * 150));
    process.kill(client.pid, 'SIGKILL');
    await turn;
    await client.closed;
    await store.flush();
    const stored = agentText((await store.get(storedId)).view);
    const r = await store.resume(storedId, launch.options(home, cwd));
    await r.client.prompt({ sessionId: r.sessionId, prompt: 'say after' });
    const recovered = agentText(r.view.snapshot());
    await r.client.close();
    await store.close();
    // Each turn once, in order: what the store held, then the new turn.
    const ok =
      recovered.startsWith(stored) &&
      recovered.endsWith('Hello! You said: say after') &&
      count(recovered, 'You said: say before') === 1 &&
      count(recovered, 'Starting a long answer') === 1;
    return { ok, how: r.how, storedChars: stored.length };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function agentaoKills() {
  const launch = await agentaoLaunch();
  try {
    say(`## 2b. kill -9 of a real agent (agentao ${PEER_PINS.agentao}) mid-turn, ${KILLS} times`);
    say();
    say(
      'agentao offers `session/load`, but writes its history only when its stdin closes: after a kill -9 it knows nothing of the session, the load fails, and the session comes back fresh, seeded from the store. The recovered view must hold every stored turn once, then the new one.',
    );
    say();
    const hows = new Map();
    let ok = 0;
    for (let i = 0; i < KILLS; i++) {
      const r = await agentaoKillOnce(launch);
      if (r.ok) ok++;
      else console.error(`  agentao #${i}: recovered by ${r.how}, stored ${r.storedChars} chars, not equal`);
      hows.set(r.how, (hows.get(r.how) ?? 0) + 1);
    }
    const by = [...hows].map(([how, n]) => `${how} ${n}`).join(', ');
    say('| agent | recovered by | equal |');
    say('|---|---|---|');
    say(`| agentao ${PEER_PINS.agentao} | ${by} | ${ok} of ${KILLS} |`);
    say();
  } finally {
    launch.llm.close();
  }
}

// ---- 3. host kill -9 during a flood ------------------------------------

const HOST = `
const { AcpClient, SessionStore } = require(${JSON.stringify(here('../index.js'))});
(async () => {
  const store = await SessionStore.open(process.argv[1], { intervalMs: 20 });
  const client = await AcpClient.connect({ command: process.execPath, args: [${JSON.stringify(MOCK)}], store });
  const { sessionId } = await client.newSession();
  process.stdout.write('id ' + Object.values(client.recordedSessions())[0] + '\\n');
  for (let turn = 1; ; turn++) {
    await client.prompt({ sessionId, prompt: 'text:500' });
    await store.flush();
    process.stdout.write('committed ' + turn + '\\n');
  }
})();
`;

async function hostKillOnce() {
  const dir = scratch();
  try {
    const child = spawn(process.execPath, ['-e', HOST, join(dir, 'store')], { stdio: ['ignore', 'pipe', 'inherit'] });
    let text = '';
    child.stdout.on('data', (d) => (text += d));
    await new Promise((r) => {
      const check = () => (/committed 2\n/.test(text) ? r() : setTimeout(check, 5));
      check();
    });
    await new Promise((r) => setTimeout(r, 50 + Math.random() * 300));
    child.kill('SIGKILL');
    await new Promise((r) => child.on('close', r));
    const id = /id (\S+)/.exec(text)[1];
    const committed = Math.max(...[...text.matchAll(/committed (\d+)/g)].map((m) => Number(m[1])));
    let store;
    try {
      store = await SessionStore.open(join(dir, 'store'));
    } catch (err) {
      return { opened: false, error: err.code };
    }
    const view = (await store.get(id)).view;
    await store.close();
    // Each turn is 500 chunks "chunk0 " … "chunk499 ".
    const turns = agentText(view).split('chunk499 ').length - 1;
    return { opened: true, keptTurns: turns, committed, lostCommitted: turns < committed };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function hostKills() {
  say(`## 3. kill -9 of the host during a flood, ${KILLS} times`);
  say();
  let opened = 0;
  let lost = 0;
  const beyond = [];
  for (let i = 0; i < KILLS; i++) {
    const r = await hostKillOnce();
    if (r.opened) opened++;
    if (r.lostCommitted) lost++;
    if (r.opened) beyond.push(r.keptTurns - r.committed);
  }
  say('| store opens | committed turns lost | turns kept beyond the last committed flush (median) |');
  say('|---|---|---|');
  say(`| ${opened} of ${KILLS} | ${lost} of ${KILLS} | ${median(beyond)} |`);
  say();
}

// ---- 4. 10,000 sessions ---------------------------------------------------

const WORDS =
  'alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november oscar papa quebec romeo sierra tango'.split(
    ' ',
  );

async function bigStore() {
  const dir = scratch();
  try {
    const store = await SessionStore.open(dir, { maxSessions: 0 });
    const rec = store[RECORDER];
    const t0 = performance.now();
    for (let i = 0; i < 10_000; i++) {
      const text =
        Array.from({ length: 200 }, (_, j) => WORDS[(i * 7 + j * 13) % WORDS.length]).join(' ') + ` unique${i}`;
      const view = { sessionId: `a${i}`, entries: [{ index: 0, kind: 'agent', content: [{ type: 'text', text }] }] };
      rec.create({
        id: `s_${String(i).padStart(32, '0')}`,
        agent: { command: 'agent' },
        agentSessionId: `a${i}`,
        cwd: '/w',
        title: `session ${i}`,
        view,
      });
      rec.journal(`s_${String(i).padStart(32, '0')}`, 'prompt', { prompt: [{ type: 'text', text: `question ${i}` }] });
    }
    await store.flush();
    const fillMs = performance.now() - t0;
    const time = async (f, n = 20) => {
      const xs = [];
      for (let i = 0; i < n; i++) {
        const s = performance.now();
        await f(i);
        xs.push(performance.now() - s);
      }
      return median(xs);
    };
    const list = await time(() => store.list({ limit: 100 }));
    const listDeep = await time(() => store.list({ limit: 100, offset: 9_800 }));
    const rare = await time((i) => store.search(`unique${i * 97}`));
    const common = await time(() => store.search('alpha bravo', { limit: 20 }));
    await store.close();
    say('## 4. A store of 10,000 sessions');
    say();
    say(
      `Filled in ${(fillMs / 1000).toFixed(1)} s (10,000 sessions, a 1.4 KB view and a prompt each, through the writer thread). Medians of 20 calls, from JS:`,
    );
    say();
    say('| call | ms |');
    say('|---|---|');
    say(`| list({limit: 100}) | ${list.toFixed(2)} |`);
    say(`| list({limit: 100, offset: 9800}) | ${listDeep.toFixed(2)} |`);
    say(`| search(a word in 1 session) | ${rare.toFixed(2)} |`);
    say(`| search(two words in every session), limit 20 | ${common.toFixed(2)} |`);
    say();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

say('# Session store benchmarks');
say();
say(
  `${os.cpus().length} × ${os.cpus()[0]?.model ?? '?'}, Node ${process.version}, ${new Date().toISOString().slice(0, 10)}.`,
);
say();
const only = process.argv[2];
if (!only || only === 'flood') flood();
if (!only || only === 'agent') await agentKills();
if (!only || only === 'agentao') await agentaoKills();
if (!only || only === 'host') await hostKills();
if (!only || only === 'big') await bigStore();
if (!only) writeFileSync(here('./RESULTS-store.md'), `${out.join('\n')}\n`);
