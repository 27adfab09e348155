// The floor: a minimal hand-written client, readline + JSON.parse, no
// validation, no timeouts, no error handling beyond the essentials.
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';

export async function open({ command, args, onUpdate, onPermission }) {
  const child = spawn(command, args, { stdio: ['pipe', 'pipe', 'inherit'] });
  const pending = new Map();
  let nextId = 0;
  const write = (msg) => child.stdin.write(JSON.stringify(msg) + '\n');
  const request = (method, params) =>
    new Promise((resolve, reject) => {
      const id = ++nextId;
      pending.set(id, { resolve, reject });
      write({ jsonrpc: '2.0', id, method, params });
    });
  const rl = createInterface({ input: child.stdout, crlfDelay: Infinity });
  rl.on('line', (line) => {
    const msg = JSON.parse(line);
    if (msg.method === undefined) {
      const p = pending.get(msg.id);
      pending.delete(msg.id);
      if (msg.error) p?.reject(msg.error);
      else p?.resolve(msg.result);
    } else if (msg.id === undefined) {
      if (msg.method === 'session/update') onUpdate(msg.params);
    } else if (msg.method === 'session/request_permission') {
      Promise.resolve(onPermission(msg.params)).then((result) => write({ jsonrpc: '2.0', id: msg.id, result }));
    } else {
      write({ jsonrpc: '2.0', id: msg.id, error: { code: -32601, message: 'Method not found' } });
    }
  });
  await request('initialize', { protocolVersion: 1, clientCapabilities: {} });
  return {
    newSession: async () => (await request('session/new', { cwd: process.cwd(), mcpServers: [] })).sessionId,
    prompt: (sessionId, text) => request('session/prompt', { sessionId, prompt: [{ type: 'text', text }] }),
    ping: () => request('_bench/ping', {}),
    close: async () => {
      child.stdin.end();
      await new Promise((r) => (child.exitCode !== null ? r() : child.once('exit', r)));
    },
  };
}
