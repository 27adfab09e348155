// Print a readable wire trace, state changes and core logs for one turn
// against the mock agent: `npm run demo:trace`.
import { fileURLToPath } from 'node:url';
import { AcpClient } from '../index.mjs';

const agent = fileURLToPath(new URL('../mock-agent/agent.mjs', import.meta.url));

const client = new AcpClient({
  command: process.execPath,
  args: [agent],
  trace: (r) => {
    const arrow = r.direction === 'send' ? '→' : '←';
    const took = r.durationMs === undefined ? '' : ` (${r.durationMs.toFixed(1)} ms)`;
    console.log(`${arrow} ${r.kind} ${r.method ?? ''} ${r.id ?? ''}${took} ${r.bytes} B`);
  },
  logger: (r) => console.log(`  [${r.level}] ${r.message} ${JSON.stringify(r.fields)}`),
  logLevel: 'debug',
  handlers: {
    'session/request_permission': (p) => ({ outcome: { outcome: 'selected', optionId: p.options[0].optionId } }),
  },
});
client.on('state', ({ previous, state }) => console.log(`  state: ${previous} → ${state}`));

await client.initialize();
const { sessionId } = await client.newSession();
await client.prompt({ sessionId, prompt: 'say:hello permission plan' });
console.log('status:', JSON.stringify(client.status(), null, 2));
await client.close();
