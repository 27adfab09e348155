// The official TypeScript SDK (@agentclientprotocol/sdk 2.4.0), with its
// current builder API: client().onNotification().onRequest().connect(ndJsonStream(…)).
import { spawn } from 'node:child_process';
import { Readable, Writable } from 'node:stream';
import { client, ndJsonStream, methods } from '@agentclientprotocol/sdk';

export async function open({ command, args, onUpdate, onPermission }) {
  const child = spawn(command, args, { stdio: ['pipe', 'pipe', 'inherit'] });
  const stream = ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));
  const connection = client({ name: 'bench' })
    .onNotification(methods.client.session.update, ({ params }) => onUpdate(params))
    .onRequest(methods.client.session.requestPermission, ({ params }) => onPermission(params))
    .connect(stream);
  const agent = connection.agent;
  await agent.request(methods.agent.initialize, { protocolVersion: 1, clientCapabilities: {} });
  return {
    newSession: async () =>
      (await agent.request(methods.agent.session.new, { cwd: process.cwd(), mcpServers: [] })).sessionId,
    prompt: (sessionId, text) =>
      agent.request(methods.agent.session.prompt, { sessionId, prompt: [{ type: 'text', text }] }),
    ping: () => agent.request('_bench/ping', {}),
    close: async () => {
      child.stdin.end();
      await new Promise((r) => (child.exitCode !== null ? r() : child.once('exit', r)));
      connection.close();
    },
  };
}
