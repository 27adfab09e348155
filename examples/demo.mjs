// Demo host: drives the mock agent through one prompt turn (a plan, a
// thought, two tool calls, a permission question) and prints it the way a
// chat UI would.
//
//   npm run demo
import { fileURLToPath } from 'node:url';
import { AcpClient } from '../index.mjs';

const agent = fileURLToPath(new URL('../mock-agent/agent.mjs', import.meta.url));
const PLAN_MARK = { completed: 'x', in_progress: '>', pending: ' ' };
const titles = new Map(); // toolCallId → title, for the updates that carry only the id

const client = new AcpClient({
  command: process.execPath,
  args: [agent, '--string-ids', '--no-reports'],
  onSessionUpdate({ update }) {
    switch (update.sessionUpdate) {
      case 'agent_message_chunk':
        if (update.content.type === 'text') console.log(`agent: ${update.content.text}`);
        break;
      case 'agent_thought_chunk':
        if (update.content.type === 'text') console.log(`(thinking: ${update.content.text.trim()})`);
        break;
      case 'tool_call':
        titles.set(update.toolCallId, update.title);
        console.log(`▸ ${update.title} (${update.kind ?? 'tool'}, ${update.status ?? 'pending'})`);
        break;
      case 'tool_call_update':
        if (update.status) console.log(`  ↳ ${titles.get(update.toolCallId) ?? update.toolCallId}: ${update.status}`);
        break;
      case 'plan':
        console.log('plan:');
        for (const e of update.entries) console.log(`  [${PLAN_MARK[e.status] ?? ' '}] ${e.content}`);
        break;
      default:
        console.log(`(${update.sessionUpdate})`);
    }
  },
  handlers: {
    // A real host shows a dialog; the demo picks "allow once" and says so.
    'session/request_permission'({ toolCall, options }) {
      const choice = options.find((o) => o.kind === 'allow_once') ?? options[0];
      console.log(`? permission to ${toolCall.title}: ${options.map((o) => o.name).join(' / ')}`);
      console.log(`  → ${choice.name}`);
      return { outcome: { outcome: 'selected', optionId: choice.optionId } };
    },
  },
});

const init = await client.initialize();
console.log(`connected to ${init.agentInfo.name} ${init.agentInfo.version} (ACP protocol ${init.protocolVersion})`);
const { sessionId } = await client.newSession();
const prompt = 'plan thought:1 tool permission say:All_done.';
console.log(`session ${sessionId}\n> ${prompt}   (the mock agent reads the prompt as a script)\n`);
const { stopReason } = await client.prompt({ sessionId, prompt });
console.log(`\nturn ended: ${stopReason}`);
const exit = await client.close();
console.log(`agent stopped (exit code ${exit.exitCode})`);
