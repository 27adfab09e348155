// Command-line parsing for `acp-native`. No dependencies: the grammar is
// small (a subcommand, a few options, then `--` and the agent command).

export const USAGE = `Usage:
  acp-native chat [--save] [--cwd DIR] [--stderr] [--fs] [--terminals] -- <agent command> [args...]
  acp-native chat --agent ID [--save] [--store DIR] [--index URL|FILE] [--offline] [--cwd DIR] [--stderr] [--fs] [--terminals]
  acp-native agents list|info ID|install ID|remove ID|probe ID [--store DIR] [--index URL|FILE] [--offline] [--json]
  acp-native record --out FILE [--cwd DIR] [--stderr] [--fs] [--terminals] -- <agent command> [args...]
  acp-native replay [--realtime] FILE
  acp-native export [--format md|json] [--session ID] [--out FILE] [LIMITS] FILE
  acp-native export --load ID [--format md|json] [--out FILE] [--cwd DIR] [LIMITS] -- <agent command> [args...]
  acp-native doctor [--json] [--binary FILE]
  acp-native sessions list|search TEXT|show ID|export ID [--store DIR] [--json] [--limit N] [--format md|json] [--out FILE]
  acp-native sessions resume ID [--store DIR] [--stderr] [--fs] [--terminals] [-- <agent command> [args...]]
  acp-native --help | --version

chat     talk to an ACP agent in this terminal (Ctrl-C cancels the turn,
         a second Ctrl-C or Ctrl-D exits)
record   the same, and write every wire message to FILE as NDJSON
replay   act as an ACP agent over stdio that replays a recorded session
export   a session's transcript (Markdown, or the session view's state as
         JSON) from a recording, or from an agent that replays session ID
agents   the agents of the ACP registry (or --index): list them, show
         one, install one into the store, remove it, or probe it (start,
         initialize, open a session: ready, needs-auth or failed)
sessions the session store (default ~/.local/share/acp-native/sessions, or
         $ACP_NATIVE_STORE): list, full-text search, show a transcript,
         export one (Markdown or JSON), or resume one in a chat (the
         stored agent command unless one is given after --)
doctor   show the native binary this install runs (path, SHA-256, glibc it
         needs) and whether it loads; exit 1 if it does not

Options:
  --cwd DIR     working directory of the session (default: the current one)
  --stderr      show what the agent writes to stderr
  --fs          let the agent read and write files under the session cwd
                (the built-in fs/* handlers, confined to that directory)
  --terminals   let the agent run commands in terminals under the session cwd
  --out FILE    (record) where to write the recording
  --realtime    (replay) keep the recorded pauses between messages
  --format F    (export) md (default) or json
  --session ID  (export) only this session of the recording
  --load ID     (export) load session ID from the agent and export it
  LIMITS        (export) the session view's limits, raised for a long
                session (what they refused is counted in the export):
                --max-entries N (50000), --max-text-bytes N per message
                (4 MiB), --max-total-bytes N (64 MiB); N up to 4294967295;
                from a recording also --max-sessions N (100) and
                --max-line-bytes N (128 MiB): longer lines, lines nested
                deeper than 512 and later sessions are skipped (and said)
  --agent ID    (chat) run the registry agent ID, installed first if needed
  --save        (chat) record the session in the session store
                ($ACP_NATIVE_STORE, else a per-user data directory), for
                "acp-native sessions" to list, search and resume
  --store DIR   (agents) the agent store (default: $ACP_NATIVE_AGENTS_DIR,
                else a per-user data directory); (sessions) the session
                store's directory
  --index SRC   the agent index: an http(s) URL or a JSON file (default:
                the public ACP registry, cached; offline: the cached copy)
  --offline     (agents, chat --agent) do not fetch the index
  --version V   (agents install|remove) this version
  --refresh     (agents probe) probe again, not the cached result
  --limit N     (sessions list|search) how many at most
  --json        (doctor, agents, sessions list|search) print JSON
  --binary FILE (doctor) check this .node file instead of the installed one
`;

/** A command-line mistake: printed with the usage, exit code 2. */
export class UsageError extends Error {}

const SPECS = {
  chat: {
    values: ['--cwd', '--agent', '--store', '--index'],
    flags: ['--stderr', '--fs', '--terminals', '--offline', '--save'],
    agent: true,
  },
  record: { values: ['--cwd', '--out'], flags: ['--stderr', '--fs', '--terminals'], agent: true, required: ['--out'] },
  replay: { values: [], flags: ['--realtime'], agent: false },
  // With --load, the positionals are the agent command; else one FILE.
  export: {
    values: [
      '--format',
      '--session',
      '--out',
      '--load',
      '--cwd',
      '--max-entries',
      '--max-text-bytes',
      '--max-total-bytes',
      '--max-sessions',
      '--max-line-bytes',
    ],
    flags: [],
    agent: false,
  },
  doctor: { values: ['--binary'], flags: ['--json'], agent: false, file: false },
  agents: {
    values: ['--store', '--index', '--version', '--cwd'],
    flags: ['--json', '--offline', '--refresh'],
    agent: false,
  },
  sessions: {
    values: ['--store', '--limit', '--format', '--out', '--cwd'],
    flags: ['--json', '--stderr', '--fs', '--terminals'],
    agent: false,
  },
};

const AGENTS_SUBCOMMANDS = { list: false, info: true, install: true, remove: true, probe: true }; // → needs an ID

const SESSION_ACTIONS = { list: 0, search: 1, show: 1, export: 1, resume: 1 };

/** `sessions ACTION [ARG] [-- agent command]`. */
function sessionsCommand(options, positional, agentArgv) {
  const [action, ...args] = positional;
  if (!(action in SESSION_ACTIONS))
    throw new UsageError(`sessions needs one of ${Object.keys(SESSION_ACTIONS).join(', ')}`);
  if (args.length !== SESSION_ACTIONS[action])
    throw new UsageError(`sessions ${action} needs ${SESSION_ACTIONS[action] ? 'one argument' : 'no argument'}`);
  if (agentArgv.length > 0 && action !== 'resume') throw new UsageError(`sessions ${action} takes no agent command`);
  const agent = agentArgv.length > 0 ? { command: agentArgv[0], args: agentArgv.slice(1) } : undefined;
  return { command: 'sessions', options, action, arg: args[0], agent };
}

/**
 * Parse `argv` (without node and the script). Returns
 * `{ command: 'help' | 'version' }` or
 * `{ command, options: { cwd, out, stderr, fs, terminals, realtime, json, binary }, agent: { command, args }, file }`.
 */
export function parseArgs(argv) {
  const [command, ...rest] = argv;
  if (command === undefined || command === '--help' || command === '-h' || command === 'help')
    return { command: 'help' };
  if (command === '--version' || command === '-v') return { command: 'version' };
  const spec = SPECS[command];
  if (!spec) throw new UsageError(`unknown command '${command}'`);

  const options = {};
  const positional = [];
  let i = 0;
  for (; i < rest.length; i++) {
    const arg = rest[i];
    if (arg === '--') {
      i++;
      break;
    }
    if (arg === '--help' || arg === '-h') return { command: 'help' }; // `acp-native agents --help`
    if (spec.values.includes(arg)) {
      if (i + 1 >= rest.length) throw new UsageError(`${arg} needs a value`);
      options[arg.slice(2)] = rest[++i];
    } else if (spec.flags.includes(arg)) {
      options[arg.slice(2)] = true;
    } else if (arg.startsWith('--') && positional.length === 0) {
      throw new UsageError(`unknown option '${arg}' for ${command}`);
    } else {
      positional.push(arg);
      // Without `--`, the first positional starts the agent command.
      if (spec.agent) {
        i++;
        break;
      }
    }
  }
  if (command === 'sessions') return sessionsCommand(options, positional, rest.slice(i));
  positional.push(...rest.slice(i));
  for (const name of spec.required ?? []) {
    if (options[name.slice(2)] === undefined) throw new UsageError(`${command} needs ${name} FILE`);
  }

  if (command === 'agents') {
    const [sub, id, ...extra] = positional;
    if (!(sub in AGENTS_SUBCOMMANDS))
      throw new UsageError(`agents needs one of ${Object.keys(AGENTS_SUBCOMMANDS).join(', ')}`);
    if (AGENTS_SUBCOMMANDS[sub] && id === undefined) throw new UsageError(`agents ${sub} needs an agent ID`);
    if (extra.length || (!AGENTS_SUBCOMMANDS[sub] && id !== undefined))
      throw new UsageError(`agents ${sub}: unexpected argument '${extra[0] ?? id}'`);
    return { command, options, sub, id };
  }
  if (command === 'chat' && options.agent !== undefined) {
    if (positional.length > 0) throw new UsageError('chat takes --agent ID or an agent command, not both');
    return { command, options, agentId: options.agent };
  }
  if (spec.agent || (command === 'export' && options.load !== undefined)) {
    if (positional.length === 0) throw new UsageError(`${command} needs the agent command after --`);
    const [agentCommand, ...agentArgs] = positional;
    return { command, options, agent: { command: agentCommand, args: agentArgs } };
  }
  if (spec.file === false) {
    if (positional.length > 0) throw new UsageError(`${command} takes no arguments (got '${positional[0]}')`);
    return { command, options };
  }
  if (positional.length !== 1) throw new UsageError(`${command} needs exactly one recording FILE`);
  return { command, options, file: positional[0] };
}
