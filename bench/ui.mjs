// `npm run bench:ui`: "stream to a UI". An agent streams a session's
// updates; a UI keeps the folded state. Scenarios (BENCH_SCENARIOS, comma
// separated; all by default): the realistic ones of bench/real-turns.mjs
// (tool calls, thoughts, plans and usage between the chunks of a message,
// many turns, big tool outputs, images) and `backToBack` (200k chunks back
// to back, the old figure). Compared, each in fresh processes, medians of
// BENCH_REPEAT runs, interleaved (every client once per repeat, in turn):
//   view      acp-native's session view (folded in Rust, change events
//             applied to a UI copy with applyChanges)
//   native    acp-native onSessionUpdate + the JS reference fold
//   sdk       the official SDK + the same fold
//   readline  readline + JSON.parse + the same fold
//   idle      the control: a loop with nothing to do while an agent floods
//             as much into /dev/null (the machine's own stalls)
// BENCH_CLIENTS picks clients (default: all). On each scenario every
// client must end in the same final state (asserted by hash). Each repeat
// runs every client twice: CPU, time and memory come from a run without
// the 1 ms event-loop delay monitor, stalls from one with it (the
// monitor's own wake-ups cost CPU; see ui-one.mjs).
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { createHash } from 'node:crypto';
import { UI } from './scenarios.mjs';
import { REAL } from './real-turns.mjs';

const REPEAT = Number(process.env.BENCH_REPEAT ?? 5);
const CLIENTS = (process.env.BENCH_CLIENTS ?? 'view,native,sdk,readline,idle').split(',');
const SCENARIOS = (process.env.BENCH_SCENARIOS ?? [...Object.keys(REAL), 'backToBack'].join(',')).split(',');
const here = (p) => fileURLToPath(new URL(p, import.meta.url));

function runOne(client, mode, scenario) {
  const out = execFileSync(process.execPath, [here('./ui-one.mjs'), client, mode, scenario], {
    encoding: 'utf8',
    timeout: 600_000,
    maxBuffer: 1 << 30,
  });
  const r = JSON.parse(out.trim().split('\n').pop());
  if (r.state !== null) r.stateHash = createHash('sha256').update(r.state).digest('hex');
  delete r.state;
  return r;
}

const median = (xs) => {
  const s = xs.filter((x) => x !== undefined).sort((a, b) => a - b);
  return s.length ? s[Math.floor(s.length / 2)] : undefined;
};
const range = (xs) => {
  const s = xs.filter((x) => x !== undefined).sort((a, b) => a - b);
  return s.length ? [s[0], s[s.length - 1]] : undefined;
};
const fmt = (v, d = 2) => (v === undefined || Number.isNaN(v) ? '—' : v.toFixed(d));
const fmtRange = (r, d = 2) => (r === undefined ? '—' : `${fmt(r[0], d)}–${fmt(r[1], d)}`);

const title = (s) =>
  s === 'backToBack'
    ? `back to back: ${UI.chunks / 1000}k × 64 B text chunks across ${UI.messages} messages + ${UI.toolUpdates} tool_call_updates`
    : REAL[s].title;

const lines = [];
lines.push(
  `Stream to a UI; medians (and ranges) of ${REPEAT} interleaved runs; node ${process.version}; load average at start ${(await import('node:os')).loadavg()[0].toFixed(1)}. CPU per update from runs without the 1 ms event-loop delay monitor, worst stall from runs with it (see bench/ui-one.mjs).`,
);
const summary = [];
for (const scenario of SCENARIOS) {
  const runs = Object.fromEntries(CLIENTS.map((c) => [c, { cpu: [], stall: [] }]));
  for (let i = 0; i < REPEAT; i++) {
    for (const client of CLIENTS) {
      for (const mode of ['cpu', 'stall']) runs[client][mode].push(runOne(client, mode, scenario));
      process.stderr.write(`  ${scenario} run ${i + 1}/${REPEAT} ${client}\n`);
    }
  }
  const all = Object.values(runs).flatMap((r) => [...r.cpu, ...r.stall]);
  const hashes = new Set(all.filter((r) => r.client !== 'idle').map((r) => r.stateHash));
  if (hashes.size !== 1) throw new Error(`${scenario}: the clients ended in ${hashes.size} different final states`);
  const hash = [...hashes][0];
  const cpuOf = (c) => runs[c].cpu.map((r) => r.cpuUsPerUpdate);
  const stallOf = (c) => runs[c].stall.map((r) => r.maxStallMs);
  const updates = runs[CLIENTS[0]].cpu[0].updates;

  lines.push('');
  lines.push(`### ${scenario}: ${title(scenario)}`);
  lines.push('');
  lines.push(
    `${updates.toLocaleString('en')} updates; every client run ended in the same final state (sha256 ${hash.slice(0, 12)}…, ${runs.view?.cpu[0].entries ?? '?'} entries).`,
  );
  lines.push('');
  lines.push(
    '| client | host CPU µs/update | range | JS thread µs/update | addon threads µs/update | worst loop stall ms (range) | time to final state ms | peak RSS MB | change events |',
  );
  lines.push('|---|---|---|---|---|---|---|---|---|');
  for (const c of CLIENTS) {
    const m = (k) => median(runs[c].cpu.map((r) => r[k]));
    lines.push(
      `| ${c} | ${fmt(median(cpuOf(c)))} | ${fmtRange(range(cpuOf(c)))} | ${fmt(m('jsThreadUsPerUpdate'))} | ${fmt(m('addonThreadsUsPerUpdate'))} | ${fmt(median(stallOf(c)), 1)} (${fmtRange(range(stallOf(c)), 1)}) | ${fmt(m('finalMs'), 0)} | ${fmt(m('peakRssMb'), 0)} | ${m('changeEvents') ?? '—'} |`,
    );
  }
  if (CLIENTS.includes('view')) {
    // Ratios pair by pair (run i of one client against run i of the view:
    // the same minutes of the machine), then the median of those.
    const paired = (c) => median(runs[c].cpu.map((r, i) => r.cpuUsPerUpdate / runs.view.cpu[i].cpuUsPerUpdate));
    const row = {
      scenario,
      sdk: CLIENTS.includes('sdk') ? paired('sdk') : undefined,
      readline: CLIENTS.includes('readline') ? paired('readline') : undefined,
      stall: median(stallOf('view')),
      idle: CLIENTS.includes('idle') ? median(stallOf('idle')) : undefined,
    };
    summary.push(row);
    lines.push('');
    lines.push(
      `SDK + fold ÷ view: ${fmt(row.sdk, 1)}× (asked ≥ 30×); readline + fold ÷ view: ${fmt(row.readline, 1)}× (asked ≥ 8×); view's worst stall ${fmt(row.stall, 1)} ms (asked ≤ 5; idle floor ${fmt(row.idle, 1)}).`,
    );
  }
}
if (summary.length > 0) {
  lines.push('');
  lines.push('### Targets');
  lines.push('');
  lines.push(
    '| scenario | SDK + fold ÷ view (≥ 30×) | readline + fold ÷ view (≥ 8×) | view worst stall ms (≤ 5) | idle floor ms |',
  );
  lines.push('|---|---|---|---|---|');
  const yes = (ok) => (ok ? '' : ' **no**');
  for (const r of summary)
    lines.push(
      `| ${r.scenario} | ${fmt(r.sdk, 1)}×${yes(r.sdk >= 30)} | ${fmt(r.readline, 1)}×${yes(r.readline >= 8)} | ${fmt(r.stall, 1)}${yes(r.stall <= 5)} | ${fmt(r.idle, 1)} |`,
    );
}
process.stdout.write(lines.join('\n') + '\n');
