// `npm run bench:tree` (Linux): what the per-process reaper costs.
// For each mechanism (reaper, or plain process groups via
// ACP_NATIVE_PROCESS_TREE=group) and host heap size, a fresh host process
// starts agents one after another and reports the spawn call and
// spawn-to-initialize times, then keeps AGENTS agents alive and reports
// what each reaper holds (RSS, PSS, private memory, page tables) right after
// the spawn and after the host has rewritten its whole heap (pages the host
// changes stay behind in the reaper, which is a copy of the host).
import { execFileSync } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import os from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';

const SPAWNS = Number(process.env.BENCH_SPAWNS ?? 30);
const AGENTS = 10;
const self = fileURLToPath(import.meta.url);
const MOCK = fileURLToPath(new URL('../mock-agent/agent.mjs', import.meta.url));

const kb = (text, field) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(text)?.[1] ?? 0);
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const p90 = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length * 0.9)];

function childrenOf(pid) {
  const out = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      if (Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === pid) out.push(Number(name));
    } catch {}
  }
  return out;
}

/** Mean per reaper (direct children of this host that have children). */
function reaperMemory() {
  const reapers = childrenOf(process.pid).filter((pid) => childrenOf(pid).length > 0);
  if (reapers.length === 0) return null;
  const sum = { rss: 0, pss: 0, priv: 0, pte: 0 };
  for (const pid of reapers) {
    const r = readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8');
    const s = readFileSync(`/proc/${pid}/status`, 'utf8');
    sum.rss += kb(r, 'Rss');
    sum.pss += kb(r, 'Pss');
    sum.priv += kb(r, 'Private_Clean') + kb(r, 'Private_Dirty');
    sum.pte += kb(s, 'VmPTE');
  }
  return Object.fromEntries(Object.entries(sum).map(([k, v]) => [k, v / reapers.length / 1024]));
}

async function host(heapMb) {
  const { AcpClient } = await import('../index.mjs');
  const heap = heapMb > 0 ? Buffer.alloc(heapMb * 2 ** 20, 1) : null;
  const spawnMs = [];
  const initMs = [];
  const alive = [];
  for (let i = 0; i < SPAWNS; i++) {
    const t0 = performance.now();
    const client = new AcpClient({ command: process.execPath, args: [MOCK] });
    const t1 = performance.now();
    await client.initialize();
    const t2 = performance.now();
    spawnMs.push(t1 - t0);
    initMs.push(t2 - t0);
    if (alive.length < AGENTS) alive.push(client);
    else await client.close();
  }
  await sleep(200);
  const fresh = reaperMemory();
  heap?.fill(2); // the host rewrites its heap
  await sleep(200);
  const aged = reaperMemory();
  await Promise.all(alive.map((c) => c.close()));
  return {
    spawnMs: median(spawnMs),
    spawnP90: p90(spawnMs),
    initMs: median(initMs),
    initP90: p90(initMs),
    fresh,
    aged,
  };
}

if (process.argv[2] === '--host') {
  console.log(JSON.stringify(await host(Number(process.argv[3]))));
} else {
  // Repetitions outermost and mechanisms alternating, so drift in machine
  // load (a shared VM) lands on both; medians of the per-run medians.
  const REPEAT = Number(process.env.BENCH_REPEAT ?? 3);
  const runs = {};
  for (let i = 0; i < REPEAT; i++) {
    for (const heapMb of [0, 500]) {
      for (const mechanism of ['group', 'reaper']) {
        const env = { ...process.env };
        if (mechanism === 'group') env.ACP_NATIVE_PROCESS_TREE = 'group';
        else delete env.ACP_NATIVE_PROCESS_TREE;
        const out = execFileSync(process.execPath, [self, '--host', String(heapMb)], {
          env,
          encoding: 'utf8',
          timeout: 600_000,
        });
        (runs[`${mechanism} ${heapMb}`] ??= []).push(JSON.parse(out.trim().split('\n').pop()));
        process.stderr.write(`  run ${i + 1}/${REPEAT}: ${mechanism}, host heap ${heapMb} MB\n`);
      }
    }
  }
  const rows = Object.entries(runs).map(([key, rs]) => {
    const [mechanism, heapMb] = key.split(' ');
    const med = (pick) => (rs.some((r) => pick(r) == null) ? null : median(rs.map(pick)));
    const memory = (which) =>
      rs[0][which] ? Object.fromEntries(['rss', 'pss', 'priv', 'pte'].map((k) => [k, med((r) => r[which][k])])) : null;
    return {
      mechanism,
      heapMb,
      spawnMs: med((r) => r.spawnMs),
      spawnP90: med((r) => r.spawnP90),
      initMs: med((r) => r.initMs),
      initP90: med((r) => r.initP90),
      fresh: memory('fresh'),
      aged: memory('aged'),
    };
  });
  const f = (v, d = 1) => (v === undefined || v === null ? '—' : v.toFixed(d));
  const mem = (m, k) => (m ? f(m[k], 2) : '—');
  console.log(
    `\nspawn cost, ${SPAWNS} sequential agents (median / p90; medians of ${REPEAT} runs), and per reaper with ${AGENTS} agents alive; load average ${os
      .loadavg()
      .map((l) => l.toFixed(1))
      .join(' ')}\n`,
  );
  console.log(
    '| mechanism | host heap | spawn call ms | spawn→initialize ms | reaper RSS MB | reaper PSS MB | reaper private MB | reaper page tables MB | private after host rewrites heap MB |',
  );
  console.log('|---|---|---|---|---|---|---|---|---|');
  for (const r of rows) {
    console.log(
      `| ${r.mechanism} | ${r.heapMb} MB | ${f(r.spawnMs, 2)} / ${f(r.spawnP90, 2)} | ${f(r.initMs)} / ${f(r.initP90)} | ${mem(r.fresh, 'rss')} | ${mem(r.fresh, 'pss')} | ${mem(r.fresh, 'priv')} | ${mem(r.fresh, 'pte')} | ${mem(r.aged, 'priv')} |`,
    );
  }
}
