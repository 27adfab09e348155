// One measurement in a fresh process (so peak RSS is this run's):
//   node bench/run-one.mjs <client> <variant> <scenario>
// Prints one JSON object with the metrics.
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { setImmediate as tick } from 'node:timers/promises';
import { SCENARIOS } from './scenarios.mjs';

const [clientName, variant, scenarioName] = process.argv.slice(2);
const scenario = SCENARIOS[scenarioName];
const { open } = await import(`./clients/${clientName}.mjs`);
const agent = fileURLToPath(new URL('./flood-agent.mjs', import.meta.url));

let updates = 0;
const onUpdate = scenario.slowHandler
  ? async () => {
      await tick();
      updates++;
    }
  : () => {
      updates++;
    };
const onPermission = () => ({ outcome: { outcome: 'selected', optionId: 'allow' } });

const conn = await open({ command: process.execPath, args: [agent], onUpdate, onPermission, variant });
const sessionId = await conn.newSession();

const delay = monitorEventLoopDelay({ resolution: 1 });
const cpu0 = process.cpuUsage();
const t0 = process.hrtime.bigint();
delay.enable();
const result = { client: clientName, variant, scenario: scenarioName };
let messages;
if (scenario.pings) {
  const latencies = new Float64Array(scenario.pings);
  for (let i = 0; i < scenario.pings; i++) {
    const s = process.hrtime.bigint();
    await conn.ping();
    latencies[i] = Number(process.hrtime.bigint() - s) / 1000;
  }
  latencies.sort();
  result.p50Us = latencies[Math.floor(latencies.length * 0.5)];
  result.p99Us = latencies[Math.floor(latencies.length * 0.99)];
  messages = scenario.pings;
} else {
  const res = await conn.prompt(sessionId, scenario.prompt);
  // A slow handler may still be running for the last updates.
  while (scenario.updates && updates < scenario.updates) await tick();
  result.bytes = res?._meta?.floodBytes ?? 0;
  messages = scenario.updates ?? scenario.roundTrips;
}
delay.disable();
const wallMs = Number(process.hrtime.bigint() - t0) / 1e6;
const cpu = process.cpuUsage(cpu0);
await conn.close();

if (scenario.updates && updates !== scenario.updates) {
  throw new Error(`${clientName}: ${updates} of ${scenario.updates} updates arrived`);
}
Object.assign(result, {
  wallMs,
  messages,
  msgsPerSec: messages / (wallMs / 1000),
  mbPerSec: result.bytes ? result.bytes / 1e6 / (wallMs / 1000) : undefined,
  cpuUsPerMsg: (cpu.user + cpu.system) / messages,
  usPerRoundTrip: scenario.roundTrips ? (wallMs * 1000) / scenario.roundTrips : undefined,
  peakRssMb: process.resourceUsage().maxRSS / 1024,
  maxLoopDelayMs: delay.max / 1e6,
});
process.stdout.write(JSON.stringify(result) + '\n');
