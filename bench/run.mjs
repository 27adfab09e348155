// `npm run bench`: every client × scenario in fresh processes, medians of
// REPEAT runs, one table with ratios from this same run.
import { execFileSync, spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import os from 'node:os';
import { SCENARIOS } from './scenarios.mjs';

const REPEAT = Number(process.env.BENCH_REPEAT ?? 5);
// BENCH_SCENARIOS=small,ping,permission runs those only (default: all).
const ONLY = process.env.BENCH_SCENARIOS?.split(',');
const here = (p) => fileURLToPath(new URL(p, import.meta.url));

// client, variant, scenarios it runs
const RUNS = [
  ['native', 'default', ['small', 'large', 'permission', 'ping', 'slow']],
  ['native', 'no-history', ['small']],
  ['native', 'trace', ['small']],
  ['sdk', 'default', ['small', 'large', 'permission', 'ping', 'slow']],
  ['readline', 'default', ['small', 'large', 'permission', 'ping', 'slow']],
  ['pipe', 'default', ['small', 'large']],
];

function median(xs) {
  const s = xs.filter((x) => x !== undefined).sort((a, b) => a - b);
  return s.length ? s[Math.floor(s.length / 2)] : undefined;
}

function runOne(client, variant, scenario) {
  const out = execFileSync(process.execPath, ['--expose-gc', here('./run-one.mjs'), client, variant, scenario], {
    encoding: 'utf8',
    timeout: 300_000,
  });
  return JSON.parse(out.trim().split('\n').pop());
}

/** Prove the flood agent is not the bottleneck: time it into /dev/null. */
function agentAlone(script) {
  const r = spawnSync(process.execPath, [here('./flood-agent.mjs'), '--standalone', script], {
    stdio: ['ignore', 'ignore', 'pipe'],
    encoding: 'utf8',
  });
  return JSON.parse(r.stderr.trim());
}

const results = {};
const METRICS = [
  'wallMs',
  'msgsPerSec',
  'mbPerSec',
  'cpuUsPerMsg',
  'peakRssMb',
  'maxLoopDelayMs',
  'p50Us',
  'p99Us',
  'usPerRoundTrip',
];
const keyOf = (client, variant, scenario) => `${client}${variant === 'default' ? '' : `:${variant}`}/${scenario}`;
const runs = {};
// Repetitions outermost, so drift in machine load (a shared VM) is spread
// over every client instead of landing on whichever ran last.
for (let i = 0; i < REPEAT; i++) {
  for (const [client, variant, scenarios] of RUNS) {
    for (const scenario of scenarios) {
      if (ONLY !== undefined && !ONLY.includes(scenario)) continue;
      const key = keyOf(client, variant, scenario);
      (runs[key] ??= []).push(runOne(client, variant, scenario));
      process.stderr.write(`  run ${i + 1}/${REPEAT} ${key}\n`);
    }
  }
}
for (const [key, rs] of Object.entries(runs)) {
  results[key] = Object.fromEntries(METRICS.map((m) => [m, median(rs.map((r) => r[m]))]));
}

const fmt = (v, digits = 1) =>
  v === undefined ? '—' : v >= 100_000 ? `${(v / 1000).toFixed(0)} k` : v.toFixed(digits);
const get = (client, scenario, metric) => results[`${client}/${scenario}`]?.[metric];

const lines = [];
const p = (s = '') => lines.push(s);
const small = agentAlone('small:200000');
const large = agentAlone('large:20000:16384');
const sdkVersion = JSON.parse(
  readFileSync(here('../node_modules/@agentclientprotocol/sdk/package.json'), 'utf8'),
).version;
p(
  `Machine: ${os.cpus().length} × ${os.cpus()[0]?.model ?? 'cpu'}, ${(os.totalmem() / 2 ** 30).toFixed(0)} GiB, ${os.platform()} ${os.release()}, load average before the run ${os.loadavg()[0].toFixed(2)}.`,
);
p(
  `Versions: Node ${process.version}, acp-native ${JSON.parse(readFileSync(here('../package.json'), 'utf8')).version} (release build), @agentclientprotocol/sdk ${sdkVersion}. Run on ${new Date().toISOString().slice(0, 10)}.`,
);
p(
  `Medians of ${REPEAT} runs, each client in a fresh process. Flood agent alone into /dev/null: ` +
    `${fmt(small.msgsPerSec, 0)} small msg/s, ${fmt(large.msgsPerSec, 0)} 16 KB msg/s.`,
);
p();
p(
  '| scenario | client | wall ms | msg/s | MB/s | CPU µs/msg | peak RSS MB | worst loop stall ms | p50 µs | p99 µs | µs/round trip |',
);
p('|---|---|---|---|---|---|---|---|---|---|---|');
for (const [name, sc] of Object.entries(SCENARIOS)) {
  for (const key of Object.keys(results).filter((k) => k.endsWith(`/${name}`))) {
    const r = results[key];
    p(
      `| ${sc.title} | ${key.split('/')[0]} | ${fmt(r.wallMs, 0)} | ${fmt(r.msgsPerSec, 0)} | ${fmt(r.mbPerSec)} | ${fmt(r.cpuUsPerMsg, 2)} | ${fmt(r.peakRssMb, 0)} | ${fmt(r.maxLoopDelayMs)} | ${fmt(r.p50Us, 0)} | ${fmt(r.p99Us, 0)} | ${fmt(r.usPerRoundTrip, 0)} |`,
    );
  }
}
p();
const targets = [
  ['small updates: msg/s vs SDK', get('native', 'small', 'msgsPerSec') / get('sdk', 'small', 'msgsPerSec'), 10],
  [
    'small updates: msg/s vs readline',
    get('native', 'small', 'msgsPerSec') / get('readline', 'small', 'msgsPerSec'),
    2,
  ],
  ['16 KB updates: msg/s vs SDK', get('native', 'large', 'msgsPerSec') / get('sdk', 'large', 'msgsPerSec'), 2],
  [
    '16 KB updates: msg/s vs readline',
    get('native', 'large', 'msgsPerSec') / get('readline', 'large', 'msgsPerSec'),
    1.2,
  ],
  [
    'worst loop stall, small flood (ms, ≤ 25)',
    25 / get('native', 'small', 'maxLoopDelayMs'),
    1,
    get('native', 'small', 'maxLoopDelayMs'),
  ],
  [
    'worst loop stall, 16 KB flood (ms, ≤ 25)',
    25 / get('native', 'large', 'maxLoopDelayMs'),
    1,
    get('native', 'large', 'maxLoopDelayMs'),
  ],
  [
    'CPU/msg, small: readline ÷ native',
    get('readline', 'small', 'cpuUsPerMsg') / get('native', 'small', 'cpuUsPerMsg'),
    1,
  ],
  [
    'CPU/msg, 16 KB: readline ÷ native',
    get('readline', 'large', 'cpuUsPerMsg') / get('native', 'large', 'cpuUsPerMsg'),
    1,
  ],
  [
    'permission round trip: readline ÷ native',
    get('readline', 'permission', 'usPerRoundTrip') / get('native', 'permission', 'usPerRoundTrip'),
    1,
  ],
  ['ping p50: readline ÷ native', get('readline', 'ping', 'p50Us') / get('native', 'ping', 'p50Us'), 1],
  ['peak RSS, small flood: SDK ÷ native', get('sdk', 'small', 'peakRssMb') / get('native', 'small', 'peakRssMb'), 1],
  ['peak RSS, 16 KB flood: SDK ÷ native', get('sdk', 'large', 'peakRssMb') / get('native', 'large', 'peakRssMb'), 1],
  ['peak RSS, slow handler: SDK ÷ native', get('sdk', 'slow', 'peakRssMb') / get('native', 'slow', 'peakRssMb'), 1],
];
p('| target | measured | needed | met |');
p('|---|---|---|---|');
for (const [name, value, needed, raw] of targets) {
  if (Number.isNaN(value)) continue; // a scenario not run
  const shown = raw !== undefined ? `${raw.toFixed(1)} ms` : `${value.toFixed(2)}×`;
  p(
    `| ${name} | ${shown} | ${raw !== undefined ? '≤ 25 ms' : `≥ ${needed}×`} | ${value >= needed ? 'yes' : '**no**'} |`,
  );
}
p();
const trace = (v) => get(`native${v}`, 'small', 'msgsPerSec');
p(
  `Tracing cost (small flood, msg/s): history off ${fmt(trace(':no-history'), 0)}, default (history ring on, trace off) ${fmt(trace(''), 0)}, live trace callback ${fmt(trace(':trace'), 0)}.`,
);

const table = lines.join('\n');
console.log(table);
// `npm run bench -- --save`: put this table into bench/RESULTS.md.
if (process.argv.includes('--save')) {
  const file = here('./RESULTS.md');
  const doc = readFileSync(file, 'utf8');
  const start = '<!-- results:start -->';
  const end = '<!-- results:end -->';
  const next = doc.slice(0, doc.indexOf(start) + start.length) + '\n' + table + '\n' + doc.slice(doc.indexOf(end));
  writeFileSync(file, next);
  console.log(`\nsaved to ${file}`);
}
