// An example host that drives agentao the way a VS Code extension would,
// with the terminal standing in for the editor's UI:
//
//   extension                         here
//   ---------------------------------------------------------------------
//   settings + SecretStorage          OPENAI_* env, --agent, --workspace
//   one agent per workspace folder    cwd = --workspace
//   workspaceState (last session)     ~/.local/state/acp-native-example/
//   chat view, streamed               stdout, one prefix per update kind
//   permission quick pick (modal)     numbered options, answer on stdin
//   ask_user input box                the question, answer on stdin
//   stop button                       Ctrl-C or /cancel
//   mode / model pickers              /mode <id>, /model <value>
//   output channel                    agent stderr in --log FILE
//   deactivate()                      stdin EOF: close(), agentao saves the session
//
//   OPENAI_API_KEY=… OPENAI_BASE_URL=… OPENAI_MODEL=… \
//     node examples/agentao-host.mjs --workspace /path/to/project [--agent /path/to/agentao]
//
// Type a prompt and press Enter. `npm run test:interop` runs this host
// against real agentao and a fake LLM (interop/example-host.test.mjs).
import { appendFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { parseArgs } from 'node:util';
import { AcpClient } from '../index.mjs';

// ---- "settings" -----------------------------------------------------------
const { values: flags } = parseArgs({
  options: {
    workspace: { type: 'string', default: process.cwd() },
    agent: { type: 'string', default: process.env.AGENTAO_PATH || 'agentao' },
    log: { type: 'string' },
    'new-session': { type: 'boolean', default: false },
  },
});
const workspace = resolve(flags.workspace);
const settings = {
  agentPath: flags.agent,
  // A real extension reads these from its settings and SecretStorage and
  // passes them explicitly: a GUI-launched editor may not have them in env.
  llm: {
    OPENAI_API_KEY: process.env.OPENAI_API_KEY,
    OPENAI_BASE_URL: process.env.OPENAI_BASE_URL,
    OPENAI_MODEL: process.env.OPENAI_MODEL,
  },
};

// ---- "workspaceState": remembers the last session per workspace -----------
const stateFile = join(
  process.env.XDG_STATE_HOME || join(homedir(), '.local', 'state'),
  'acp-native-example',
  'workspace-state.json',
);
const workspaceState = {
  get(key) {
    try {
      return JSON.parse(readFileSync(stateFile, 'utf8'))[workspace]?.[key];
    } catch {
      return undefined;
    }
  },
  update(key, value) {
    let all = {};
    try {
      all = JSON.parse(readFileSync(stateFile, 'utf8'));
    } catch {
      // first write
    }
    all[workspace] = { ...all[workspace], [key]: value };
    mkdirSync(dirname(stateFile), { recursive: true });
    writeFileSync(stateFile, JSON.stringify(all, null, 2));
  },
};

// ---- the "chat view" ------------------------------------------------------
let streaming = null; // the kind of chunk being streamed inline
function line(text) {
  if (streaming) process.stdout.write('\n');
  streaming = null;
  process.stdout.write(`${text}\n`);
}
function chunk(kind, label, text) {
  if (streaming !== kind) {
    if (streaming) process.stdout.write('\n');
    process.stdout.write(`${label}> `);
    streaming = kind;
  }
  process.stdout.write(text);
}
const PLAN_MARK = { pending: '[ ]', in_progress: '[~]', completed: '[x]' };
const toolTitles = new Map(); // toolCallId → title: updates often omit the title
function render({ update }) {
  switch (update.sessionUpdate) {
    case 'agent_message_chunk':
      return chunk('agent', 'agent', update.content?.text ?? `(${update.content?.type})`);
    case 'agent_thought_chunk':
      return chunk('thought', 'thinking', update.content?.text ?? '');
    case 'user_message_chunk': // history replayed by session/load
      return chunk('user', 'you', update.content?.text ?? '');
    case 'tool_call':
      toolTitles.set(update.toolCallId, update.title);
      return line(`[tool] ${update.title} (${update.status ?? 'pending'})`);
    case 'tool_call_update':
      if (!update.status) return undefined;
      return line(
        `[tool] ${update.title ?? toolTitles.get(update.toolCallId) ?? update.toolCallId} -> ${update.status}`,
      );
    case 'plan':
      return line(`[plan]\n${update.entries.map((e) => `  ${PLAN_MARK[e.status] ?? '[?]'} ${e.content}`).join('\n')}`);
    case 'current_mode_update':
      return line(`[mode] ${update.currentModeId}`);
    default:
      return line(`[${update.sessionUpdate}]`); // unknown kinds are shown, never dropped
  }
}

// ---- modal dialogs: the next input line answers them ----------------------
let dialog = null;
function ask(promptText, signal) {
  line(promptText);
  return new Promise((resolveAnswer, reject) => {
    dialog = { answer: resolveAnswer };
    // The turn was cancelled (or the agent died): close the dialog. The
    // client has already answered the agent for us.
    signal.addEventListener('abort', () => {
      dialog = null;
      line('[dialog dismissed]');
      reject(signal.reason);
    });
  });
}

const handlers = {
  async 'session/request_permission'({ toolCall, options }, { signal }) {
    const menu = options.map((o, i) => `  ${i + 1}) ${o.name}`).join('\n');
    const detail = toolCall.rawInput?.command ?? toolCall.rawInput?.file_path ?? '';
    const answer = await ask(`[permission] ${toolCall.title} ${detail}\n${menu}\nchoose 1-${options.length}:`, signal);
    const choice = options[Number(answer) - 1];
    // Anything but a valid number dismisses the dialog, like Escape.
    return choice
      ? { outcome: { outcome: 'selected', optionId: choice.optionId } }
      : { outcome: { outcome: 'cancelled' } };
  },
  async '_agentao.cn/ask_user'({ question }, { signal }) {
    const text = await ask(`[question] ${question}`, signal);
    return { outcome: 'answered', text };
  },
};

// ---- the agent ------------------------------------------------------------
let sessionId = null;

/** Reopen the remembered session if agentao saved it, else start a new one. */
async function openSession(client) {
  const saved = flags['new-session'] ? undefined : workspaceState.get('sessionId');
  if (saved && client.agent.agentCapabilities?.loadSession) {
    try {
      await client.loadSession({ sessionId: saved, cwd: workspace }); // history replays first
      line(`[session] resumed ${saved}`);
      return saved;
    } catch (err) {
      line(`[session] could not resume ${saved}: ${err.message}`);
    }
  }
  const created = await client.newSession({ cwd: workspace });
  line(`[session] new ${created.sessionId} (mode ${created.modes?.currentModeId ?? '?'})`);
  workspaceState.update('sessionId', created.sessionId);
  return created.sessionId;
}

function fail(what, err) {
  line(`[agent] ${what}: ${err.code ?? ''} ${err.message}`);
  process.exit(1);
}

let client;
try {
  client = new AcpClient({
    command: settings.agentPath,
    args: ['--acp', '--stdio'],
    cwd: workspace,
    env: settings.llm,
    clientInfo: { name: 'acp-native-example-host', version: '0.1.0' },
    handlers,
    onSessionUpdate: render,
    // agentao saves the session after stdin EOF and exits by itself (~0.5 s);
    // SIGTERM (after the grace) would lose the session.
    closeGraceMs: 15_000,
    // Restart a crashed agent; a crash loses unsaved turns (agentao saves on stdin EOF only).
    restart: { maxRestarts: 3 },
    async onRestart(c, { attempt }) {
      line(`[agent] restarted (attempt ${attempt}, pid ${c.pid})`);
      await c.initialize();
      sessionId = await openSession(c);
      line('ready');
    },
  });
} catch (err) {
  fail(`cannot start ${settings.agentPath} (set --agent or AGENTAO_PATH)`, err);
}
client.on('stderr', (text) => flags.log && appendFileSync(flags.log, text)); // the output channel
client.on('exit', (info) => !shuttingDown && line(`[agent] exited (code ${info.exitCode}, signal ${info.signal})`));
client.on('restartFailed', ({ reason }) => {
  line(`[agent] gave up restarting: ${reason}`);
  process.exitCode = 1;
  rl?.close();
});

// ---- input: prompts, commands, dialog answers ------------------------------
let turn = null;
let shuttingDown = false;
let rl = null; // created once the session is open: earlier input waits in the pipe

async function runTurn(text) {
  try {
    const { stopReason } = await client.prompt({ sessionId, prompt: text });
    line(`turn ended: ${stopReason}`);
  } catch (err) {
    line(`turn failed: ${err.code}${err.rpcCode ? ` ${err.rpcCode}` : ''} ${err.data?.reason ?? ''} ${err.message}`);
  }
}

async function command(text) {
  const [name, arg] = text.split(/\s+/, 2);
  try {
    if (name === '/mode') await client.setSessionMode({ sessionId, modeId: arg });
    else if (name === '/model') {
      const { configOptions } = await client.setSessionConfigOption({ sessionId, configId: 'model', value: arg });
      line(`[model] ${configOptions.find((o) => o.id === 'model')?.currentValue}`);
    } else line(`unknown command ${name}`);
  } catch (err) {
    line(`${name} failed: ${err.message}`);
  }
}

function stop() {
  if (turn)
    client.cancel(sessionId).catch(() => {}); // the stop button
  else rl.close(); // Ctrl-C when idle quits
}

try {
  const init = await client.initialize();
  line(`[agent] ${init.agentInfo?.name} ${init.agentInfo?.version} (pid ${client.pid}), workspace ${workspace}`);
  sessionId = await openSession(client);
} catch (err) {
  client.kill();
  fail('could not open a session', err); // e.g. -32000 when OPENAI_* are not set
}
line('ready');

// ---- input: prompts, commands, dialog answers ------------------------------
rl = createInterface({ input: process.stdin });
rl.on('line', (text) => {
  if (dialog) {
    const d = dialog;
    dialog = null;
    return d.answer(text.trim());
  }
  if (text === '/cancel') return turn && stop();
  if (turn) return line('(busy: wait for "ready", or /cancel)');
  if (text.trim() === '') return undefined;
  turn = (text.startsWith('/') ? command(text) : runTurn(text)).finally(() => {
    turn = null;
    line('ready');
  });
  return undefined;
});
process.on('SIGINT', stop);

// deactivate(): finish or cancel the turn, then close stdin so agentao saves the session.
rl.on('close', async () => {
  if (turn) stop();
  await turn;
  shuttingDown = true;
  const exit = await client.close();
  line(`[agent] closed (code ${exit.exitCode}); session ${sessionId} saved`);
  process.exit();
});
