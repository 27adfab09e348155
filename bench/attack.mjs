// `npm run bench:attack`: each attack of bench/attack-one.mjs in a fresh
// host process, one table. Linux only (peak RSS from /proc).
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { loadavg } from 'node:os';

if (!existsSync('/proc/self/clear_refs')) {
  console.log('bench:attack needs Linux (/proc/self/clear_refs); skipped');
  process.exit(0);
}
const ATTACKS = [
  'none (baseline)',
  'terminal output 16 MiB of \\x01 × 40 requests',
  '60k wait_for_exit + 60k unknown cancels',
  '1000 unknown updates of 1 MiB into a session view',
  '20k permission requests (16 KiB) to a handler that waits',
  '40 concurrent reads of 10 MiB of U+0001',
  '40 released setsid writers (8 MiB each)',
  '100 terminal/create + release in a host of 500 MB',
  '300 MiB of stderr',
  'line 2 of a 1 TiB sparse file × 4',
  '8 MiB write then $/cancel_request × 10',
  '57 MB tool_call line (rawInput [0,0,…]) into a session view',
  '60 MB permission request (rawInput [0,0,…]) pending, with a session view',
  '60 MB permission request (rawInput [0,0,…]) to a handler that waits',
  '60 MB permission request to a handler that waits, params whole (maxHandlerParamsBytes: Infinity)',
  '21 MB session/load result with a session view',
  '21 MB session/load result with a session view, result whole (maxResultBytes: Infinity)',
  '4 concurrent reads of 10 MiB of U+0001 × 5',
  'terminal output 16 MiB of \\x01\\xff × 4 × 3',
  'line and limit 2^53 of a 1 TiB sparse file × 4',
  'snapshot() of a 64 MiB \\u0001 view while it streams',
  'history() of a full ring during a flood',
  'a 64 MiB recorded view (session store on) while another agent streams',
];
const only = process.argv[2];
const loadBefore = loadavg();
const rows = [];
for (const attack of ATTACKS.filter((a) => !only || a.includes(only))) {
  process.stderr.write(`  ${attack}\n`);
  try {
    const out = execFileSync(
      process.execPath,
      ['--expose-gc', fileURLToPath(new URL('./attack-one.mjs', import.meta.url)), attack],
      {
        encoding: 'utf8',
        timeout: 600_000,
        stdio: ['ignore', 'pipe', 'inherit'],
      },
    );
    rows.push(JSON.parse(out.trim().split('\n').at(-1)));
  } catch (err) {
    rows.push({ attack, error: String(err.message).split('\n')[0] });
  }
}
const load = (l) => l.map((x) => x.toFixed(2)).join(' ');
console.log(
  `Load average before: ${load(loadBefore)}, after: ${load(loadavg())} (2 shared cores: delays include waiting for a CPU).`,
);
console.log(
  '| attack | budget MB | host RSS growth MB | within budget + 50 | victim worst delay ms (ticks seen) | victim worst read ms (reads) | of which in the host ms | ≤ 50 ms | host loop stall ms | attack ms | what the attacker got |',
);
console.log('|---|---|---|---|---|---|---|---|---|---|---|');
for (const r of rows) {
  if (r.error) {
    console.log(`| ${r.attack} | — | — | — | — | — | — | — | — | — | failed: ${r.error} |`);
    continue;
  }
  const okMem = r.rssGrowthMB <= r.budgetMB + 50 ? 'yes' : '**no**';
  const okDelay = r.worstDelayMs <= 50 && r.readWorstMs <= 50 && r.readErrors === 0 ? 'yes' : '**no**';
  const answers = JSON.stringify(r.answers ?? {}).replaceAll('|', '\\|');
  const read = `${r.readWorstMs} (${r.reads}${r.readErrors ? `, ${r.readErrors} failed` : ''})`;
  console.log(
    `| ${r.attack} | ${r.budgetMB} | ${r.rssGrowthMB} | ${okMem} | ${r.worstDelayMs} (${r.ticks}) | ${read} | ${r.readInHostMs} | ${okDelay} | ${r.loopStallMs} | ${r.attackMs} | ${answers} |`,
  );
}
