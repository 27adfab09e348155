// Where a ping's time goes, acp-native against the readline floor:
//   node bench/round-trip.mjs [pings] [rounds]
// Each client runs in a fresh process, the clients taking turns for
// `rounds` rounds (load drifts over both alike); medians of the rounds.
// The agent stamps its answer with the monotonic clock the host's
// process.hrtime reads, which splits each round trip into the way out
// (host sends → agent answers) and the way back (agent writes → the
// host's await goes on). On Linux, each thread of the host also reports
// what a ping costs it: CPU time, and how often it went to sleep
// (voluntary context switches: one per wakeup it waited for).
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import os from 'node:os';

const here = (p) => fileURLToPath(new URL(p, import.meta.url));
const ONE = process.argv[2] === '--one' ? process.argv[3] : null;
const PINGS = Number((ONE ? process.argv[4] : process.argv[2]) ?? 20_000);
const ROUNDS = Number(process.argv[3] ?? 3);
const CLIENTS = ['native', 'readline'];
const WARMUP = 1000;

/** Per thread of this process: [name, CPU ns, voluntary switches]; empty off Linux. */
function threads() {
  const dir = '/proc/self/task';
  if (!existsSync(dir)) return new Map();
  const out = new Map();
  for (const tid of readdirSync(dir)) {
    try {
      const name = readFileSync(`${dir}/${tid}/comm`, 'utf8').trim();
      const cpuNs = Number(readFileSync(`${dir}/${tid}/schedstat`, 'utf8').split(' ')[0]);
      const status = readFileSync(`${dir}/${tid}/status`, 'utf8');
      const sleeps = Number(status.match(/^voluntary_ctxt_switches:\s+(\d+)/m)?.[1]);
      out.set(tid, [tid === String(process.pid) ? 'main' : name, cpuNs, sleeps]);
    } catch {
      // The thread ended meanwhile.
    }
  }
  return out;
}

const median = (xs) => xs.sort((a, b) => a - b)[xs.length >> 1];

async function measure(clientName) {
  const { open } = await import(`./clients/${clientName}.mjs`);
  const conn = await open({
    command: process.execPath,
    args: [here('./flood-agent.mjs')],
    onUpdate() {},
    onPermission: () => ({ outcome: { outcome: 'selected', optionId: 'allow' } }),
  });
  await conn.newSession();
  for (let i = 0; i < WARMUP; i++) await conn.ping();
  const out = new Array(PINGS);
  const back = new Array(PINGS);
  const total = new Array(PINGS);
  const before = threads();
  for (let i = 0; i < PINGS; i++) {
    const sent = process.hrtime.bigint();
    const { at } = await conn.ping();
    const done = process.hrtime.bigint();
    out[i] = Number(BigInt(at) - sent) / 1000;
    back[i] = Number(done - BigInt(at)) / 1000;
    total[i] = Number(done - sent) / 1000;
  }
  const after = threads();
  await conn.close();
  const perThread = {};
  for (const [tid, [name, cpuNs, sleeps]] of after) {
    const [, cpu0 = 0, sleeps0 = 0] = before.get(tid) ?? [];
    // Node's own helpers (V8's GC threads, libuv's pool) summed as one.
    const key = name === 'main' || name === 'acp-native' ? name : 'helpers';
    const t = (perThread[key] ??= { cpuUs: 0, wakeups: 0 });
    t.cpuUs += (cpuNs - cpu0) / 1000 / PINGS;
    t.wakeups += (sleeps - sleeps0) / PINGS;
  }
  return { client: clientName, total: median(total), out: median(out), back: median(back), perThread };
}

if (ONE) {
  process.stdout.write(`${JSON.stringify(await measure(ONE))}\n`);
} else {
  const runs = Object.fromEntries(CLIENTS.map((c) => [c, []]));
  const loads = [];
  for (let i = 0; i < ROUNDS; i++) {
    loads.push(os.loadavg()[0].toFixed(2));
    for (const client of i % 2 ? [...CLIENTS].reverse() : CLIENTS) {
      const text = execFileSync(process.execPath, [here('./round-trip.mjs'), '--one', client, String(PINGS)], {
        encoding: 'utf8',
      });
      runs[client].push(JSON.parse(text));
    }
  }
  console.log(`${PINGS} pings a run, ${ROUNDS} runs a client, medians; load average ${loads.join(', ')}.\n`);
  console.log(
    '| client | round trip µs | way out µs | way back µs | per ping: main thread CPU µs, wakeups | acp-native thread | Node helpers |',
  );
  console.log('|---|---|---|---|---|---|---|');
  const m = (rs, f) => median(rs.map(f).filter((v) => v !== undefined));
  const thread = (rs, key) => {
    if (!rs.some((r) => r.perThread[key])) return '—';
    return `${m(rs, (r) => r.perThread[key]?.cpuUs ?? 0).toFixed(1)}, ${m(rs, (r) => r.perThread[key]?.wakeups ?? 0).toFixed(2)}`;
  };
  for (const [client, rs] of Object.entries(runs)) {
    console.log(
      `| ${client} | ${m(rs, (r) => r.total).toFixed(1)} | ${m(rs, (r) => r.out).toFixed(1)} | ${m(rs, (r) => r.back).toFixed(1)} | ${thread(rs, 'main')} | ${thread(rs, 'acp-native')} | ${thread(rs, 'helpers')} |`,
    );
  }
}
