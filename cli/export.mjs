// `acp-native export`: a session's transcript as Markdown or JSON, folded
// by the session view rules, from a recording (every session in it, or
// `--session ID`) or from a live agent (`--load ID`: the agent replays the
// session through `session/load` into a view).
//
// A recording is streamed line by line into the reference fold
// (lib/session-fold.js, the core's rules): memory stays within the view
// limits per session, `--max-sessions` sessions and one line of at most
// `--max-line-bytes`, whatever the file holds. What is skipped is said.
import { createRequire } from 'node:module';
import { resolve } from 'node:path';
import { jsonText } from './json-text.mjs';
import { recordingEntries, RecordingError, RECORDING_LIMITS } from './recording.mjs';

const require = createRequire(import.meta.url);
const { toMarkdown, RecordingFold, RECORDING_LIMITS: FOLD_LIMITS } = require('../lib/session-fold.js');
const { sanitizeForTerminal } = require('../lib/sanitize.js');
const { writeFileSafely } = require('../lib/safe-write.js');

const say = (text) => process.stderr.write(`acp-native: ${sanitizeForTerminal(text)}\n`);

/** Resolves to the exit code. */
export async function runExport({ file, agent, options }) {
  const format = options.format ?? 'md';
  if (format !== 'md' && format !== 'json') {
    say(`--format must be md or json, not '${format}'`);
    return 2;
  }
  const limits = numericOptions(options);
  if (typeof limits === 'string') {
    say(limits);
    return 2;
  }
  const { view, recording } = limits;
  let text;
  try {
    const sessions = agent
      ? await fromAgent(agent, options, view)
      : await fromRecording(file, options.session, view, recording);
    // One string: with limits raised far, V8's string cap (RangeError) is
    // an error like the others, not a crash.
    const states = sessions.map((s) => s.state);
    text =
      format === 'json'
        ? `${jsonText(states.length === 1 ? states[0] : states)}\n`
        : sessions.map((s) => toMarkdown(s.state, { prompts: s.prompts })).join('\n---\n\n');
    if (options.out) await writeFileSafely(options.out, text);
  } catch (err) {
    say(err.message);
    return 1;
  }
  if (!options.out) process.stdout.write(text);
  return 0;
}

const NUMERIC = [
  ['max-entries', 'view', 'maxEntries'],
  ['max-text-bytes', 'view', 'maxTextBytes'],
  ['max-total-bytes', 'view', 'maxTotalBytes'],
  ['max-sessions', 'recording', 'maxSessions'],
  ['max-line-bytes', 'recording', 'maxLineBytes'],
];

/** The limits given (`--max-entries` …), or what is wrong with one. */
function numericOptions(options) {
  const limits = { view: {}, recording: {} };
  for (const [flag, group, name] of NUMERIC) {
    const text = options[flag];
    if (text === undefined) continue;
    const n = Number(text);
    if (!/^[0-9]+$/.test(text) || n < 1 || n > 0xffffffff)
      return `--${flag} must be a whole number from 1 to 4294967295, not '${text}'`;
    limits[group][name] = n;
  }
  return limits;
}

async function fromRecording(
  file,
  sessionId,
  viewLimits,
  { maxSessions = FOLD_LIMITS.maxSessions, maxLineBytes = RECORDING_LIMITS.maxLineBytes },
) {
  const fold = new RecordingFold(viewLimits, { maxSessions });
  const skipped = { tooLong: 0, tooDeep: 0, tooWide: 0 };
  for await (const entry of recordingEntries(file, { maxLineBytes, maxDepth: RECORDING_LIMITS.maxDepth })) {
    if (entry.skipped) skipped[entry.skipped]++;
    else if (entry.record && entry.msg) fold.push(entry.record, entry.msg);
  }
  if (skipped.tooLong > 0)
    say(`${file}: skipped ${skipped.tooLong} line(s) longer than ${maxLineBytes} bytes (--max-line-bytes)`);
  if (skipped.tooDeep > 0)
    say(`${file}: skipped ${skipped.tooDeep} line(s) nested deeper than ${RECORDING_LIMITS.maxDepth}`);
  if (skipped.tooWide > 0)
    say(`${file}: skipped ${skipped.tooWide} line(s) with more than ${RECORDING_LIMITS.maxValues} JSON values`);
  if (fold.skippedUpdates > 0)
    say(
      `${file}: skipped ${fold.skippedUpdates} message(s) of sessions after the first ${maxSessions} (--max-sessions)`,
    );
  const ids = fold.sessionIds();
  const one = (id) => ({ state: fold.state(id), prompts: fold.prompts(id) });
  if (sessionId !== undefined) {
    if (!ids.includes(sessionId)) {
      const some = ids.slice(0, 20).join(', ') + (ids.length > 20 ? `, … (${ids.length})` : '');
      throw new RecordingError(`${file}: no session ${sessionId} (sessions: ${some || 'none'})`);
    }
    return [one(sessionId)];
  }
  if (ids.length === 0) throw new RecordingError(`${file}: no session updates`);
  return ids.map(one);
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
    return [{ state: view.snapshot(), prompts: [] }];
  } finally {
    await client.close();
  }
}
