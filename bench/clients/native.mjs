// acp-native, the way a host uses it. `variant`: 'default' (history ring
// on, trace off), 'no-history' (historySize 0), 'trace' (a trace callback),
// 'view' (a forwarding session view of the session), 'store' (recorded in a
// session store: the same view, copied by the store's writer thread).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AcpClient, SessionStore } from '../../index.mjs';

export async function open({ command, args, onUpdate, onPermission, variant = 'default' }) {
  let traced = 0;
  const dir = variant === 'store' ? mkdtempSync(join(tmpdir(), 'acp-bench-store-')) : null;
  const store = dir ? await SessionStore.open(dir) : undefined;
  const client = new AcpClient({
    ...(store ? { store } : {}),
    command,
    args,
    onSessionUpdate: onUpdate,
    handlers: { 'session/request_permission': onPermission },
    ...(variant === 'no-history' ? { historySize: 0 } : {}),
    ...(variant === 'trace' ? { trace: () => traced++ } : {}),
  });
  await client.initialize();
  return {
    newSession: async () => {
      const { sessionId } = await client.newSession({ cwd: process.cwd() });
      if (variant === 'view') client.session(sessionId, { forward: true });
      return sessionId;
    },
    prompt: (sessionId, text) => client.prompt({ sessionId, prompt: text }),
    ping: () => client.request('_bench/ping', {}),
    close: async () => {
      await client.close();
      if (store) {
        const stats = store.stats();
        await store.close();
        rmSync(dir, { recursive: true, force: true });
        process.stderr.write(`${JSON.stringify({ storeStats: stats })}\n`);
      }
    },
  };
}
