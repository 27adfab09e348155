// acp-native, the way a host uses it. `variant`: 'default' (history ring
// on, trace off), 'no-history' (historySize 0), 'trace' (a trace callback).
import { AcpClient } from '../../index.mjs';

export async function open({ command, args, onUpdate, onPermission, variant = 'default' }) {
  let traced = 0;
  const client = new AcpClient({
    command,
    args,
    onSessionUpdate: onUpdate,
    handlers: { 'session/request_permission': onPermission },
    ...(variant === 'no-history' ? { historySize: 0 } : {}),
    ...(variant === 'trace' ? { trace: () => traced++ } : {}),
  });
  await client.initialize();
  return {
    newSession: async () => (await client.newSession({ cwd: process.cwd() })).sessionId,
    prompt: (sessionId, text) => client.prompt({ sessionId, prompt: text }),
    ping: () => client.request('_bench/ping', {}),
    close: () => client.close(),
  };
}
