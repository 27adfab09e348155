// Demo host: drives the mock agent through one prompt turn with a
// permission request and prints the streamed updates as they arrive.
//
//   npm run demo
import { fileURLToPath } from 'node:url';
import { AcpClient } from '../index.mjs';

const agent = fileURLToPath(new URL('../mock-agent/agent.mjs', import.meta.url));

const client = new AcpClient({
  command: process.execPath,
  args: [agent, '--string-ids'],
  onSessionUpdate({ update }) {
    switch (update.sessionUpdate) {
      case 'agent_message_chunk':
        console.log(`  agent  | ${update.content.text}`);
        break;
      case 'agent_thought_chunk':
        console.log(`  think  | ${update.content.text}`);
        break;
      case 'tool_call':
        console.log(`  tool   | ${update.title} [${update.status}]`);
        break;
      case 'tool_call_update':
        console.log(`  tool   | ${update.toolCallId} -> ${update.status}`);
        break;
      case 'plan':
        for (const e of update.entries) console.log(`  plan   | [${e.status}] ${e.content}`);
        break;
      default:
        console.log(`  ${update.sessionUpdate} | ${JSON.stringify(update)}`);
    }
  },
  handlers: {
    // A real host would show a dialog; the demo approves once.
    'session/request_permission'({ toolCall, options }) {
      const choice = options.find((o) => o.kind === 'allow_once') ?? options[0];
      console.log(`  ask    | permission for "${toolCall.title}" -> ${choice.name}`);
      return { outcome: { outcome: 'selected', optionId: choice.optionId } };
    },
  },
});

const init = await client.initialize();
console.log(`connected to ${init.agentInfo.name} ${init.agentInfo.version} (protocol ${init.protocolVersion}, pid ${client.pid})`);
const { sessionId } = await client.newSession();
console.log(`session ${sessionId}\n> prompt: plan, think, read a file, ask permission, answer`);
const { stopReason } = await client.prompt({
  sessionId,
  prompt: 'plan thought:1 tool permission say:All_done.',
});
console.log(`< turn ended: ${stopReason}`);
const exit = await client.close();
console.log(`agent exited with code ${exit.exitCode}`);
