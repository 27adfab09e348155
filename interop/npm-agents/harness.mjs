// Plumbing for the published-agent tests: a real agent from the pinned
// install, launched by its recipe, on the fake model with a scratch HOME and
// project, recording what the host sees (updates, handler calls, the wire).
import { mkdirSync, readdirSync, readFileSync, realpathSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { readyAgents } from '../setup-agents.mjs';
import { RECIPES } from '../agents/recipes.mjs';
import { startFakeLlm } from '../fake-llm.mjs';
import { recordingClient, scratchDir, updates } from '../helpers.mjs';
import { scriptFor } from './tools.mjs';

/** The installed agents' root; throws a clear error if setup did not run. */
export const root = readyAgents();

/**
 * Start agent `id`. Options: `handlers`, `home`/`cwd` (to share them
 * between processes), `llm`, `extraEnv` (over the recipe's), and any
 * AcpClient option.
 */
export async function startAgent(t, id, { handlers = {}, home, cwd, llm, extraEnv = {}, ...options } = {}) {
  const recipe = RECIPES[id];
  home ??= scratchDir(t, `${id}-home`);
  cwd ??= realpathSync(scratchDir(t, `${id}-project`));
  if (!llm) {
    llm = await startFakeLlm({ script: scriptFor(id, cwd) });
    t.after(() => llm.close());
  }
  const launch = recipe.launch({ root, home, modelUrl: llm.origin });
  // Their temporary files go with the test too (qwen-code's socket
  // directories; Claude Code's shell task directories, under
  // CLAUDE_CODE_TMPDIR or /tmp); a short path: sockets live there.
  const tmp = scratchDir(t, 'tmp');
  for (const [file, content] of Object.entries(launch.files)) {
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, content);
  }
  const wire = [];
  const h = recordingClient(t, {
    command: launch.command,
    args: launch.args,
    env: { ...launch.env, TMPDIR: tmp, CLAUDE_CODE_TMPDIR: tmp, ...extraEnv },
    replaceEnv: true,
    cwd,
    fs: true,
    terminals: true,
    handlers,
    trace: (record) => wire.push(record),
    ...recipe.clientOptions,
    ...options,
  });
  return { ...h, wire, llm, home, cwd, recipe };
}

/** The agent → client requests of `method` seen on the wire, and the answers sent. */
export function agentRequests(wire, method) {
  const asked = wire.filter((r) => r.direction === 'receive' && r.kind === 'request' && r.method === method);
  return asked.map((req) => {
    const reply = wire.find(
      (r) => r.direction === 'send' && r.id === req.id && (r.kind === 'response' || r.kind === 'error'),
    );
    return { params: JSON.parse(req.payload).params, reply: reply && JSON.parse(reply.payload) };
  });
}

/** A permission handler choosing the first option of `kind`, recording its calls. */
export function choose(kind, calls = []) {
  const handler = (params) => {
    calls.push(params);
    const option = params.options.find((o) => o.kind === kind);
    if (!option) throw new Error(`no ${kind} option in ${JSON.stringify(params.options)}`);
    return { outcome: { outcome: 'selected', optionId: option.optionId } };
  };
  handler.calls = calls;
  return handler;
}

/** The agent_message_chunk texts of one session since entry `from` of `seen`, joined. */
export function textOf(seen, sessionId, from = 0) {
  return seen
    .slice(from)
    .filter((e) => e.kind === 'update' && e.sessionId === sessionId && e.update.sessionUpdate === 'agent_message_chunk')
    .map((e) => e.update.content?.text ?? '')
    .join('');
}

export { updates };

/** Every process in the tree under `pid` (Linux /proc), `pid` included. */
export function processTree(pid) {
  const parents = new Map();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      // The command name may hold spaces and parens: the ppid follows the last ')'.
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      parents.set(Number(name), ppid);
    } catch {
      // gone meanwhile
    }
  }
  const tree = [pid];
  for (let i = 0; i < tree.length; i++) for (const [child, ppid] of parents) if (ppid === tree[i]) tree.push(child);
  return tree;
}

/** The pids of `pids` that still exist and are not zombies. */
export function alive(pids) {
  return pids.filter((pid) => {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
    } catch {
      return false;
    }
  });
}

/** Resolves once none of `pids` is alive; rejects after `ms` naming the survivors. */
export async function gone(pids, ms = 20_000) {
  for (let waited = 0; ; waited += 100) {
    const left = alive(pids);
    if (left.length === 0) return;
    if (waited >= ms)
      throw new Error(`still alive ${ms} ms after close(): ${left.map((p) => `${p} ${cmdline(p)}`).join(', ')}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

function cmdline(pid) {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ').trim();
  } catch {
    return '?';
  }
}
