// Two builds side by side, with readline as the floor:
//   node bench/compare.mjs <before checkout, or - for none> [rounds] [what...]
// `what`: rt (bench/round-trip.mjs, 10,000 pings), or run-one.mjs
// scenarios (ping, permission, small…); default all four. Each run is a
// fresh process; the clients take turns, the order reversed every other
// round, so that drifting machine load falls on all alike. Prints
// medians and ranges. "read off the loop" is this checkout with the
// adaptive stdout read turned off (ACP_NATIVE_READ_ON_HOST=0: the core's
// thread reads everything, as before).
// Build both checkouts in release first (`npm run build`).
import { execFileSync } from 'node:child_process';
import os from 'node:os';
import { fileURLToPath } from 'node:url';

const here = fileURLToPath(new URL('..', import.meta.url));
const [before, roundsArg, ...whatArgs] = process.argv.slice(2);
if (!before) {
  console.error('usage: node bench/compare.mjs <before checkout> [rounds] [what...]');
  process.exit(2);
}
const ROUNDS = Number(roundsArg ?? 5);
const WHAT = whatArgs.length > 0 ? whatArgs : ['rt', 'ping', 'permission', 'small'];
const CONFIGS = [
  ...(before === '-' ? [] : [['before', before, 'native', {}]]),
  ['after, read off the loop', here, 'native', { ACP_NATIVE_READ_ON_HOST: '0' }],
  ['after (adaptive read)', here, 'native', {}],
  ['readline', here, 'readline', {}],
];

const runs = new Map();
const loads = [];
for (let round = 0; round < ROUNDS; round++) {
  loads.push(os.loadavg()[0]);
  const order = round % 2 ? [...CONFIGS].reverse() : CONFIGS;
  for (const what of WHAT) {
    for (const [name, dir, client, env] of order) {
      const args =
        what === 'rt'
          ? [`${dir}/bench/round-trip.mjs`, '--one', client, '10000']
          : [`${dir}/bench/run-one.mjs`, client, 'default', what];
      const text = execFileSync(process.execPath, args, {
        encoding: 'utf8',
        env: { ...process.env, ...env },
        stdio: ['ignore', 'pipe', 'ignore'],
      });
      const key = `${what}|${name}`;
      if (!runs.has(key)) runs.set(key, []);
      runs.get(key).push(JSON.parse(text.trim().split('\n').pop()));
    }
  }
}

const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
const span = (xs, digits = 1) =>
  `${median(xs).toFixed(digits)} (${Math.min(...xs).toFixed(digits)}–${Math.max(...xs).toFixed(digits)})`;
console.log(`${ROUNDS} rounds; load average ${Math.min(...loads).toFixed(2)}–${Math.max(...loads).toFixed(2)}.`);
for (const [key, rs] of runs) {
  const [what, name] = key.split('|');
  if (what === 'rt') {
    const thread = (t, f) => median(rs.map((r) => r.perThread[t]?.[f] ?? 0));
    console.log(
      `| ${what} | ${name} | round trip ${span(rs.map((r) => r.total))} | out ${span(rs.map((r) => r.out))} | back ${span(rs.map((r) => r.back))} | main ${thread('main', 'cpuUs').toFixed(1)} µs, ${thread('main', 'wakeups').toFixed(2)} | acp-native ${thread('acp-native', 'cpuUs').toFixed(1)} µs, ${thread('acp-native', 'wakeups').toFixed(2)} |`,
    );
  } else {
    const opt = (f, digits) =>
      rs[0][f] === undefined
        ? '—'
        : span(
            rs.map((r) => r[f]),
            digits,
          );
    console.log(
      `| ${what} | ${name} | p50 ${opt('p50Us')} | µs/round trip ${opt('usPerRoundTrip')} | k msg/s ${span(
        rs.map((r) => r.msgsPerSec / 1000),
        0,
      )} | CPU µs/msg ${span(
        rs.map((r) => r.cpuUsPerMsg),
        2,
      )} |`,
    );
  }
}
