// The tool calls that make each agent use a client feature: what the
// scripted model asks for to run a shell line, write a file or read one.
// Names and argument shapes are the agents' own (from the tools each
// offers the model).
import { join } from 'node:path';

export const TOOLS = {
  'codex-acp': {
    // require_escalated: codex asks the host before running, whatever its sandbox.
    shell: (cmd, cwd) => ({
      name: 'exec_command',
      arguments: { cmd, workdir: cwd, sandbox_permissions: 'require_escalated', justification: `run ${cmd}` },
    }),
  },
  'claude-agent-acp': {
    shell: (command) => ({ name: 'Bash', arguments: { command, description: 'Run the command' } }),
    write: (file, content, cwd) => ({ name: 'Write', arguments: { file_path: join(cwd, file), content } }),
  },
  'claude-code-acp': {
    shell: (command) => ({
      name: 'mcp__acp__Bash',
      arguments: { command, description: 'Run the command', timeout: 60000 },
    }),
    write: (file, content, cwd) => ({ name: 'mcp__acp__Write', arguments: { file_path: join(cwd, file), content } }),
    read: (file, cwd) => ({ name: 'mcp__acp__Read', arguments: { file_path: join(cwd, file) } }),
  },
  'gemini-cli': {
    shell: (command) => ({ name: 'run_shell_command', arguments: { command, description: 'Run the command' } }),
    write: (file, content, cwd) => ({ name: 'write_file', arguments: { file_path: join(cwd, file), content } }),
    read: (file, cwd) => ({ name: 'read_file', arguments: { file_path: join(cwd, file) } }),
  },
  'qwen-code': {
    shell: (command) => ({ name: 'run_shell_command', arguments: { command, description: 'Run the command' } }),
    write: (file, content, cwd) => ({ name: 'write_file', arguments: { file_path: join(cwd, file), content } }),
    read: (file, cwd) => ({ name: 'read_file', arguments: { file_path: join(cwd, file) } }),
  },
};

const rest = (text, word) => text.slice(text.indexOf(word) + word.length).trim();

/**
 * An answer every JSON writer escapes somewhere: lines, a tab, quotes, a
 * backslash, a control character (terminal colours), accents, CJK, emoji.
 */
export const ESCAPED_TEXT =
  'First line\nsecond line\tafter a tab, "quoted" and a back\\slash;\n\u001b[32mgreen\u001b[0m, café, 中文, 😀 done';

/**
 * The model's script for one agent in `cwd`:
 *   "say <words>"        streams <words> back
 *   "escapes"            streams ESCAPED_TEXT
 *   "slow"               streams until cancelled
 *   "run <shell line>"   asks to run it, then reports what the tool said
 *   "write <file> <text>" asks to write <text> to <file>
 *   "read <file>"        asks to read <file>, then quotes it
 */
export function scriptFor(agent, cwd) {
  const tools = TOOLS[agent];
  return [
    { match: /^say /, steps: [(ctx) => ({ text: rest(ctx.turnText, 'say ') })] },
    { match: /^escapes\b/, steps: [{ text: ESCAPED_TEXT }] },
    { match: /^slow\b/, steps: [{ text: 'Starting a long answer. ', trickle: 'more ' }] },
    {
      match: /^run /,
      steps: [
        (ctx) => ({ toolCalls: [tools.shell(rest(ctx.turnText, 'run '), cwd)] }),
        (ctx) => ({ text: `Ran it. Tool said: ${ctx.lastToolResult}` }),
      ],
    },
    {
      match: /^write /,
      steps: [
        (ctx) => {
          const [file, ...words] = rest(ctx.turnText, 'write ').split(' ');
          return { toolCalls: [tools.write(file, words.join(' '), cwd)] };
        },
        (ctx) => ({ text: `Wrote it. Tool said: ${ctx.lastToolResult}` }),
      ],
    },
    {
      match: /^read /,
      steps: [
        (ctx) => ({ toolCalls: [tools.read(rest(ctx.turnText, 'read '), cwd)] }),
        (ctx) => ({ text: `Read it. Tool said: ${ctx.lastToolResult}` }),
      ],
    },
    { match: '', steps: [(ctx) => ({ text: `Hello! You said: ${ctx.turnText}` })] },
  ];
}
