// `npm run bench:ui`: the "stream to a UI" scenario. An agent streams
// 200k × 64 B text chunks across 10 messages plus 2,000 tool_call_updates;
// a UI wants the folded state. Compared, each in fresh processes, medians
// of BENCH_REPEAT runs (interleaved):
//   view      acp-native's session view (folded in Rust, change events)
//   native    acp-native onSessionUpdate + the JS reference fold
//   sdk       the official SDK + the same fold
//   readline  readline + JSON.parse + the same fold
//   idle      the control: a loop with nothing to do while an agent floods
//             as much into /dev/null (the machine's own stalls)
// All four clients must end in the same final state (asserted). Each
// repeat runs every client twice: CPU, time and memory come from a run
// without the 1 ms event-loop delay monitor, stalls from one with it (the
// monitor's own wake-ups cost CPU; see ui-one.mjs).
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { createHash } from 'node:crypto';
import { UI } from './scenarios.mjs';

const REPEAT = Number(process.env.BENCH_REPEAT ?? 5);
const CLIENTS = ['view', 'native', 'sdk', 'readline', 'idle'];
const here = (p) => fileURLToPath(new URL(p, import.meta.url));

function runOne(client, mode) {
  const out = execFileSync(process.execPath, [here('./ui-one.mjs'), client, mode], { encoding: 'utf8', timeout: 300_000, maxBuffer: 256 << 20 });
  const r = JSON.parse(out.trim().split('\n').pop());
  if (r.state !== null) r.stateHash = createHash('sha256').update(r.state).digest('hex');
  delete r.state;
  return r;
}

const median = (xs) => {
  const s = xs.filter((x) => x !== undefined).sort((a, b) => a - b);
  return s.length ? s[Math.floor(s.length / 2)] : undefined;
};

const runs = Object.fromEntries(CLIENTS.map((c) => [c, { cpu: [], stall: [] }]));
for (let i = 0; i < REPEAT; i++) {
  for (const client of CLIENTS) {
    for (const mode of ['cpu', 'stall']) runs[client][mode].push(runOne(client, mode));
    process.stderr.write(`  run ${i + 1}/${REPEAT} ${client}\n`);
  }
}

const all = Object.values(runs).flatMap((r) => [...r.cpu, ...r.stall]);
const hashes = new Set(all.filter((r) => r.client !== 'idle').map((r) => r.stateHash));
if (hashes.size !== 1) throw new Error(`the clients ended in ${hashes.size} different final states`);

const METRICS = ['cpuUsPerChunk', 'jsThreadUsPerChunk', 'finalMs', 'peakRssMb', 'changeEvents'];
const med = Object.fromEntries(
  CLIENTS.map((c) => [
    c,
    {
      ...Object.fromEntries(METRICS.map((m) => [m, median(runs[c].cpu.map((r) => r[m]))])),
      maxStallMs: median(runs[c].stall.map((r) => r.maxStallMs)),
      cpuWithMonitor: median(runs[c].stall.map((r) => r.cpuUsPerChunk)),
    },
  ]),
);
const fmt = (v, d = 2) => (v === undefined ? '—' : v.toFixed(d));

const lines = [];
lines.push(`Stream to a UI: ${UI.chunks / 1000}k × 64 B text chunks across ${UI.messages} messages + ${UI.toolUpdates} tool_call_updates; medians of ${REPEAT}; node ${process.version}. CPU, time and memory from runs without the 1 ms event-loop delay monitor, worst stall from runs with it (see bench/ui-one.mjs).`);
lines.push('');
lines.push('| client | host CPU µs/chunk (all threads) | JS thread µs/chunk | worst loop stall ms | time to final state ms | peak RSS MB | change events |');
lines.push('|---|---|---|---|---|---|---|');
for (const c of CLIENTS) {
  const m = med[c];
  lines.push(`| ${c} | ${fmt(m.cpuUsPerChunk)} | ${fmt(m.jsThreadUsPerChunk)} | ${fmt(m.maxStallMs, 1)} | ${fmt(m.finalMs, 0)} | ${fmt(m.peakRssMb, 0)} | ${m.changeEvents ?? '—'} |`);
}
lines.push('');
lines.push(`All ${2 * REPEAT * (CLIENTS.length - 1)} client runs ended in the same final state (sha256 ${[...hashes][0].slice(0, 12)}…). \`idle\` is the control: an event loop with nothing to do while an agent floods as many lines into /dev/null; its worst stall is this machine's floor.`);
lines.push('');
const ratio = (a, b) => med[a][b] === undefined ? undefined : med[a][b];
const targets = [
  ['host CPU/chunk: readline ÷ view', ratio('readline', 'cpuUsPerChunk') / ratio('view', 'cpuUsPerChunk'), '≥ 5×', 5],
  ['host CPU/chunk: SDK ÷ view', ratio('sdk', 'cpuUsPerChunk') / ratio('view', 'cpuUsPerChunk'), '≥ 50×', 50],
  ['JS thread CPU/chunk: readline ÷ view', ratio('readline', 'jsThreadUsPerChunk') / ratio('view', 'jsThreadUsPerChunk'), '(≥ 5×)', 5],
  ['JS thread CPU/chunk: SDK ÷ view', ratio('sdk', 'jsThreadUsPerChunk') / ratio('view', 'jsThreadUsPerChunk'), '(≥ 50×)', 50],
];
lines.push('| target | measured | needed | met |');
lines.push('|---|---|---|---|');
for (const [name, v, need, min] of targets) lines.push(`| ${name} | ${fmt(v, 1)}× | ${need} | ${v >= min ? 'yes' : '**no**'} |`);
lines.push(`| host CPU/chunk with the 1 ms delay monitor running (the stall runs): SDK ÷ view | ${fmt(med.sdk.cpuWithMonitor / med.view.cpuWithMonitor, 1)}× | — | — |`);
const stall = med.view.maxStallMs;
lines.push(`| worst loop stall, view | ${fmt(stall, 1)} ms | ≤ 5 ms | ${stall <= 5 ? 'yes' : '**no**'} |`);
lines.push(`| worst loop stall, idle control (the floor) | ${fmt(med.idle.maxStallMs, 1)} ms | — | — |`);
process.stdout.write(lines.join('\n') + '\n');
