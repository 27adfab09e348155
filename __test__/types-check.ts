import { AcpClient, AcpError, type SessionUpdate } from '../index.js';
const c = new AcpClient({
  command: 'x',
  handlers: {
    'session/request_permission': async (p) => ({ outcome: { outcome: 'selected', optionId: p.options[0].optionId } }),
  },
});
c.onSessionUpdate(({ update }) => {
  if (update.sessionUpdate === 'plan') update.entries.map((e) => e.content);
});
c.on('exit', (i) => i.exitCode);
async function f() {
  const r = await c.prompt({ sessionId: 's', prompt: 'hi' });
  const s: string = r.stopReason;
  const u: SessionUpdate | null = null;
  return [s, u];
}
f().catch((e: AcpError) => e.code);
import { setLogger, type TraceRecord, type ClientStatus } from '../index.js';
const t = new AcpClient({
  command: 'x',
  trace: (r: TraceRecord) => r.durationMs?.toFixed(1),
  traceMaxPayloadBytes: Infinity,
  historySize: 10,
  logger: (r) => r.fields.pid,
  logLevel: 'debug',
});
t.on('state', ({ state, previous }) => state === 'busy' && previous === 'ready');
const st: ClientStatus = t.status();
const pending: number | undefined = st.pendingRequests['session/prompt'];
const h: TraceRecord[] = t.history();
t.saveHistory('/tmp/x').then((n: number) => [n, h, pending]);
setLogger((r) => r.level === 'warn', { level: 'warn' });
setLogger(null);
const b = new AcpClient({
  command: 'x',
  fs: { roots: ['/p'], readOnly: true },
  terminals: { maxTerminals: 4, env: { CI: '1' } },
});
const open: number = b.openTerminals;
void open;
import { loadNativeBinding, resultCut, rawResult } from '../index.js';
async function loaded(client: AcpClient) {
  const r = await client.loadSession({ sessionId: 's', cwd: '/' });
  const full: string | undefined = resultCut(r) ? rawResult(r) : undefined;
  return [r?.modes?.currentModeId, full];
}
void loaded;
const loadedFrom: string = loadNativeBinding('/abs/acp-native.linux-x64-gnu.node');
function firstErrors(e: AcpError) {
  if (e.code === 'ERR_ACP_NATIVE_BINDING')
    return e.tried.map((t) => [t.where, t.reason, e.platform, e.triple, loadedFrom]);
  if (e.code === 'ERR_ACP_CLOSED' || e.code === 'ERR_ACP_TIMEOUT') return e.stdoutHead?.join('\n');
  return undefined;
}
void firstErrors;

// ---- session views ----
import {
  SessionFold,
  applyChanges,
  foldRecording,
  toMarkdown,
  sanitizeForTerminal,
  escapeMarkdown,
  escapeHtml,
  type SessionViewState,
  type SessionViewChanges,
} from '../index.js';
async function sessionViewTypes(client: AcpClient) {
  const view = client.session('s', { intervalMs: 0, maxEntries: 100, setup: {} });
  view.on('change', (c: SessionViewChanges) => {
    for (const a of c.appended ?? []) a.text.toUpperCase();
  });
  const s: SessionViewState = view.snapshot();
  for (const e of s.entries) {
    if (e.kind === 'tool_call') s.toolCalls[e.toolCallId]?.status;
    else if (e.kind === 'agent') e.content.length;
  }
  const md: string = view.toMarkdown();
  const fold = new SessionFold('s', { maxKeys: 4 });
  fold.applyUpdate({ sessionUpdate: 'plan', entries: [] });
  applyChanges(fold.toJSON(), view.flush() ?? {});
  const due: boolean = view.pending;
  void due;
  foldRecording('').sessions['s']?.running;
  const safe: string =
    sanitizeForTerminal(md, { singleLine: true }) +
    escapeMarkdown(md) +
    escapeHtml(md) +
    toMarkdown(s, { prompts: [{ at: 0, content: [] }] });
  // @ts-expect-error options are an object
  sanitizeForTerminal(md, true);
  try {
    await client.saveHistory('h.ndjson');
  } catch (e) {
    if (e instanceof AcpError && e.code === 'ERR_ACP_UNSAFE_PATH') return `${safe}${e.path}${e.fileType}`;
  }
  return md;
}
void sessionViewTypes;
