// The ceiling: the agent's stdout read raw into Node, newlines counted, no
// parsing. Only the flood scenarios make sense for it.
import { spawn } from 'node:child_process';

export async function open({ command, args, onUpdate }) {
  const child = spawn(command, args, { stdio: ['pipe', 'pipe', 'inherit'] });
  let lines = 0;
  let waiter = null;
  child.stdout.on('data', (buf) => {
    let i = -1;
    while ((i = buf.indexOf(10, i + 1)) !== -1) lines++;
    if (waiter && lines >= waiter.count) waiter.resolve();
  });
  const write = (msg) => child.stdin.write(JSON.stringify(msg) + '\n');
  write({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: 1 } });
  write({ jsonrpc: '2.0', id: 2, method: 'session/new', params: { cwd: process.cwd(), mcpServers: [] } });
  return {
    newSession: async () => 'sess_1',
    prompt: async (sessionId, text) => {
      const count = Number(text.split(':')[1]);
      const target = lines + count + 1; // the updates and the response
      await new Promise((resolve) => {
        waiter = { count: target, resolve };
        write({
          jsonrpc: '2.0',
          id: 3,
          method: 'session/prompt',
          params: { sessionId, prompt: [{ type: 'text', text }] },
        });
      });
      // Count the updates for the harness without parsing them.
      for (let i = 0; i < count; i++) onUpdate(null);
      return { stopReason: 'end_turn', _meta: { floodBytes: 0 } };
    },
    ping: () => Promise.reject(new Error('the pipe client sends no requests')),
    close: async () => {
      child.stdin.end();
      await new Promise((r) => (child.exitCode !== null ? r() : child.once('exit', r)));
    },
  };
}
