// Type tests: compiled (never run) by scripts/check-types.mjs under
// module node16, nodenext and bundler. Lines after `@ts-expect-error`
// must fail to compile; the check fails if they compile.
import {
  AcpClient,
  AcpError,
  RpcError,
  type Handlers,
  type SessionNotification,
  type AgentaoAskUserRequest,
  type AgentaoAskUserResponse,
} from 'acp-native';
import defaultExport from 'acp-native';

declare const signal: AbortSignal;
const client = new AcpClient({
  command: 'agentao',
  handlers: {
    'session/request_permission': async (p, ctx) => {
      const id: string | number = ctx.requestId;
      void id;
      return { outcome: { outcome: 'selected', optionId: p.options[0]!.optionId } };
    },
    // An empty result may be omitted.
    'fs/write_text_file': async () => {},
    'fs/read_text_file': ({ path }) => ({ content: path }),
    // Extension handlers: annotate the params, or get `unknown`.
    '_agentao.cn/ask_user': async (p: AgentaoAskUserRequest): Promise<AgentaoAskUserResponse> => ({
      outcome: 'answered',
      text: p.question,
    }),
    '_vendor/raw': (p) => {
      // @ts-expect-error extension params are unknown until narrowed
      p.anything;
      return null;
    },
  },
});

const badHandlers: Handlers = {
  // @ts-expect-error the outcome is not a permission outcome
  'session/request_permission': () => ({ outcome: { outcome: 'approved' } }),
};
const typo: Handlers = {
  // @ts-expect-error a misspelt method is not a handler key
  'fs/read_txt_file': () => ({ content: '' }),
};
void badHandlers;
void typo;

// @ts-expect-error onRequest of a known method has no untyped fallback
client.onRequest('session/request_permission', () => ({ outcome: { outcome: 'approved' } }));
client.onRequest('terminal/kill', () => undefined);
client.onRequest<{ q: string }, { a: string }>('_x/q', (p) => ({ a: p.q }));

client.onNotification('session/update', (p: SessionNotification, msg) => {
  const m: 'session/update' = msg.method;
  void m;
  if (p.update.sessionUpdate === 'agent_message_chunk' && p.update.content.type === 'text')
    p.update.content.text.toUpperCase();
});
client.onNotification('*', (_p, msg) => msg.method.toUpperCase());

async function requests() {
  const s = await client.request('session/new', { cwd: '/p', mcpServers: [] });
  const id: string = s.sessionId;
  // @ts-expect-error known methods take their schema params
  await client.request('session/new', { cwd: 1 });
  const ext = await client.request('_x/y', { a: 1 });
  // @ts-expect-error an extension result is unknown by default
  ext.foo;
  const typed = await client.request<{ n: number }>('_x/y');
  typed.n.toFixed();
  await client.notify('session/cancel', { sessionId: id });
  // @ts-expect-error session/cancel needs its params
  await client.notify('session/cancel', { nope: 1 });
  const n: number = await client.cancel({ sessionId: id });
  void n;
  const r = await client.prompt({ sessionId: id, prompt: 'hi' }, { timeoutMs: 1000, signal });
  const reason: string = r.stopReason;
  void reason;
  for await (const u of client.updates(id, { signal })) u.update.sessionUpdate;
  const exit = await client.closed;
  exit.exitCode;
  await client.dispose();
  await using scoped = new AcpClient({ command: 'x' });
  void scoped;
}
void requests;

try {
  await client.initialize();
} catch (e) {
  if (e instanceof AcpError) {
    if (e.code === 'ERR_ACP_RPC') {
      const code: number | undefined = e.rpcCode;
      void code;
    } else if (e.code === 'ERR_ACP_SPAWN') {
      e.errno.toLowerCase();
    } else {
      // @ts-expect-error rpcCode exists only on ERR_ACP_RPC
      e.rpcCode;
    }
  }
}
new RpcError(-32002, 'not found', { path: '/x' });

client.on('handlerError', (err, where) => [err, where.length]);
client.on('exit', (info) => info.stderrTail.length);
// @ts-expect-error unknown event
client.on('exitt', () => {});
void defaultExport.AcpClient;

// Agent text helpers (types/sanitize.d.ts), from the ESM entry.
import { sanitizeForTerminal, escapeMarkdown, escapeHtml } from 'acp-native';
const shown: string = sanitizeForTerminal('x', { singleLine: true }) + escapeMarkdown(1) + escapeHtml(null);
void shown;
// @ts-expect-error no such option
escapeMarkdown('x', { html: true });
void defaultExport.sanitizeForTerminal;

// Agents by registry id (types/agents.d.ts), from the ESM entry.
import { AgentManager, type AgentProbe, type AgentInstallProgress } from 'acp-native';
const agents = new AgentManager({
  storeDir: '/abs/store',
  index: { agents: [] },
  presets: { mine: { command: 'my-agent' } },
});
const picked = await agents.launch('mine', {
  onProgress: (p: AgentInstallProgress) => (p.phase === 'download' ? p.receivedBytes : 0),
});
const byId = await AcpClient.connect({ agent: 'codex-acp', agents, cwd: '/abs/project' });
void byId;
const probed: AgentProbe = await agents.probe('mine');
const status: 'ready' | 'needs-auth' | 'failed' = probed.status;
void [picked.command, picked.args, picked.env, status];
// @ts-expect-error storeDir is required
new AgentManager({});
// @ts-expect-error agent and command are exclusive
await AcpClient.connect({ agent: 'x', agents, command: 'y' });
void defaultExport.AgentManager;
