// Shared plumbing for the interop tests: the installed peers, a scratch
// HOME and project directory, a fake LLM, and an AcpClient on a real agent
// that records everything the host sees.
import { AcpClient } from '../index.mjs';
import { scratchDir as testScratchDir } from '../__test__/helpers.mjs';
import { readyPeers } from './setup-peers.mjs';
import { startFakeLlm } from './fake-llm.mjs';

/** Paths of the installed peers; throws a clear error on first use if setup did not run. */
export const peers = new Proxy({}, { get: (_, key) => readyPeers()[key] });

/** A fresh directory removed after the test. */
export const scratchDir = (t, prefix) => testScratchDir(t, `interop-${prefix}`);

/**
 * The environment agentao runs with: only what it needs, so a developer's
 * own OPENAI_* variables or ~/.agentao never leak into a test.
 */
export function agentaoEnv({ home, llm, extra = {} }) {
  const env = { PATH: process.env.PATH, HOME: home, LANG: 'C.UTF-8', ...extra };
  if (llm) Object.assign(env, { OPENAI_API_KEY: 'fake-key', OPENAI_BASE_URL: llm.baseUrl, OPENAI_MODEL: llm.model });
  return env;
}

/**
 * A client on a real agent that records what the host sees.
 * `seen` is the ordered log of everything the host observed:
 *   { kind: 'update', sessionId, update } | { kind: 'request', method, params }
 * Handlers in `handlers` are wrapped so their calls are logged first.
 */
export function recordingClient(t, options) {
  const seen = [];
  const stderr = [];
  const waiters = [];
  const note = (entry) => {
    seen.push(entry);
    for (const w of waiters.splice(0)) {
      if (w.pred(entry)) w.resolve(entry);
      else waiters.push(w);
    }
  };
  /** Resolves with the first entry of `seen` (past or future) that satisfies pred. */
  const waitFor = (pred) => {
    const hit = seen.find(pred);
    return hit ? Promise.resolve(hit) : new Promise((resolve) => waiters.push({ pred, resolve }));
  };
  const handlers = {};
  for (const [method, fn] of Object.entries(options.handlers ?? {})) {
    handlers[method] = (params, ctx) => {
      note({ kind: 'request', method, params });
      return fn(params, ctx);
    };
  }
  const client = new AcpClient({
    ...options,
    handlers,
    onSessionUpdate: ({ sessionId, update }) => note({ kind: 'update', sessionId, update }),
  });
  client.on('stderr', (line) => stderr.push(line));
  t.after(() => client.kill());
  return { client, seen, stderr, waitFor };
}

/** A real agentao (`agentao --acp --stdio`) on a fake LLM, with a scratch HOME and project dir. */
export async function startAgentao(
  t,
  { handlers = {}, args = [], llm, withLlm = true, cwd, home, env = {}, ...options } = {},
) {
  if (withLlm && !llm) {
    llm = await startFakeLlm();
    t.after(() => llm.close());
  }
  home ??= scratchDir(t, 'home');
  cwd ??= scratchDir(t, 'project');
  const { client, seen, stderr, waitFor } = recordingClient(t, {
    command: peers.agentao,
    args: ['--acp', '--stdio', ...args],
    cwd,
    env: agentaoEnv({ home, llm: withLlm ? llm : null, extra: env }),
    replaceEnv: true,
    handlers,
    // agentao saves sessions on stdin EOF, then exits by itself; give it all
    // the time it needs rather than SIGTERM it (and lose the session) on a
    // busy machine. Tests then do not depend on how fast it exits.
    closeGraceMs: 60_000,
    ...options,
  });
  return { client, seen, stderr, waitFor, llm, home, cwd };
}

/** The session/update payloads in `seen`, optionally of one kind. */
export function updates(seen, kind) {
  return seen.filter((e) => e.kind === 'update' && (!kind || e.update.sessionUpdate === kind)).map((e) => e.update);
}

/** The agent_message_chunk texts, joined. */
export function agentText(seen) {
  return updates(seen, 'agent_message_chunk')
    .map((u) => u.content.text)
    .join('');
}

/** A promise and its resolver. */
export function deferred() {
  let resolve;
  const promise = new Promise((r) => (resolve = r));
  return { promise, resolve };
}
