// `acp-native export`: a session's transcript as Markdown or JSON, folded
// by the core's session view rules, from a recording (every session in it,
// or `--session ID`) or from a live agent (`--load ID`: the agent replays
// the session through `session/load` into a view).
import { createRequire } from 'node:module';
import { resolve } from 'node:path';
import { writeFileSync } from 'node:fs';
import { readRecording, RecordingError } from './recording.mjs';

const require = createRequire(import.meta.url);
const { toMarkdown } = require('../lib/session-fold.js');

/** Resolves to the exit code. */
export async function runExport({ file, agent, options }) {
  const format = options.format ?? 'md';
  if (format !== 'md' && format !== 'json') {
    process.stderr.write(`acp-native: --format must be md or json, not '${format}'\n`);
    return 2;
  }
  const limits = viewLimits(options);
  if (typeof limits === 'string') {
    process.stderr.write(`acp-native: ${limits}\n`);
    return 2;
  }
  let text;
  try {
    const states = agent ? await fromAgent(agent, options, limits) : fromRecording(file, options.session, limits);
    // One string: with limits raised far, V8's string cap (RangeError) is
    // an error like the others, not a crash.
    text =
      format === 'json'
        ? `${JSON.stringify(states.length === 1 ? states[0] : states, null, 2)}\n`
        : states.map((s) => toMarkdown(s)).join('\n---\n\n');
  } catch (err) {
    process.stderr.write(`acp-native: ${err.message}\n`);
    return 1;
  }
  if (options.out) writeFileSync(options.out, text);
  else process.stdout.write(text);
  return 0;
}

/** The view limits given (`--max-entries` …), or what is wrong with one. */
function viewLimits(options) {
  const limits = {};
  for (const [flag, name] of [
    ['max-entries', 'maxEntries'],
    ['max-text-bytes', 'maxTextBytes'],
    ['max-total-bytes', 'maxTotalBytes'],
  ]) {
    const text = options[flag];
    if (text === undefined) continue;
    const n = Number(text);
    if (!/^[0-9]+$/.test(text) || n < 1 || n > 0xffffffff) return `--${flag} must be a whole number from 1 to 4294967295, not '${text}'`;
    limits[name] = n;
  }
  return limits;
}

function fromRecording(file, sessionId, limits) {
  // Validates the file (a header, whole payloads) with the replay's rules.
  readRecording(file);
  const { native } = require('../lib/loader.js');
  const { readFileSync } = require('node:fs');
  const { sessions } = JSON.parse(native.foldRecording(readFileSync(file, 'utf8'), limits));
  const ids = Object.keys(sessions);
  if (sessionId !== undefined) {
    if (!sessions[sessionId]) throw new RecordingError(`${file}: no session ${sessionId} (sessions: ${ids.join(', ') || 'none'})`);
    return [sessions[sessionId]];
  }
  if (ids.length === 0) throw new RecordingError(`${file}: no session updates`);
  return ids.map((id) => sessions[id]);
}

async function fromAgent(agent, options, limits) {
  const { AcpClient } = require('../index.js');
  const client = await AcpClient.connect({ command: agent.command, args: agent.args, cwd: options.cwd });
  try {
    if (client.agent?.agentCapabilities?.loadSession !== true) {
      throw new Error('the agent does not support session/load (agentCapabilities.loadSession)');
    }
    const view = client.session(options.load, limits);
    // The replay folds into the view; the response's modes are folded too.
    await client.loadSession({ sessionId: options.load, cwd: resolve(options.cwd ?? '.') });
    return [view.snapshot()];
  } finally {
    await client.close();
  }
}
