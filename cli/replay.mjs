// `acp-native replay FILE`: an ACP agent on stdio that replays a recorded
// session, so a host UI can be exercised without an LLM.
//
// Matching rules (also in docs/cli.md):
// - The recording is cut into segments at each message the client sent on
//   its own (a request or a notification). A segment is that message plus
//   everything recorded after it up to the next one.
// - A live client request or notification is matched to the next unused
//   recorded one with the same method (each method in recorded order), and
//   the agent side of its segment is played: notifications, agent requests
//   and noise lines verbatim; responses with the id rewritten to the live
//   request's id (responses to requests the live client never made are
//   skipped).
// - Where the recording has the client answering an agent request, replay
//   waits for the live client's answer to that id before going on. It
//   does not branch on the answer: the recorded session continues.
// - Segments play one at a time, in the order their messages arrived.
// - A request with no recorded counterpart left is answered with a
//   JSON-RPC error (-32601). A `session/cancel` with none left ends every
//   open `session/prompt` with `stopReason: "cancelled"`.
// - `--realtime` keeps the recorded pause before each agent message
//   (at most 5 s each); otherwise messages go out as fast as possible.
import { createInterface } from 'node:readline';
import { setTimeout as sleep } from 'node:timers/promises';
import { createRequire } from 'node:module';
import { readRecording, RecordingError } from './recording.mjs';

const { sanitizeForTerminal } = createRequire(import.meta.url)('../lib/sanitize.js');

const MAX_PAUSE_MS = 5000;
const idKey = (id) => JSON.stringify(id);

/** Split records into the agent's opening messages and one segment per client-initiated message. */
export function segment(records) {
  const prelude = [];
  const segments = [];
  for (const record of records) {
    const clientInitiated =
      record.direction === 'send' && (record.kind === 'request' || record.kind === 'notification');
    if (clientInitiated) segments.push({ op: record, events: [] });
    else if (segments.length === 0) prelude.push(record);
    else segments.at(-1).events.push(record);
  }
  return { prelude, segments };
}

export class Replayer {
  #write;
  #log;
  #realtime;
  #prelude;
  #byMethod = new Map(); // `${kind} ${method}` → segments not yet played, in order
  #liveIds = new Map(); // recorded client request id → live id
  #openLive = new Map(); // live request id key → { id, method }, not answered yet
  #emittedAgentRequests = new Set(); // agent request ids sent to the live client
  #answers = new Map(); // agent request id → the live client's answer
  #answerWaiters = new Map(); // agent request id → resolve
  #chain = Promise.resolve();

  /** `write(line)` sends one line to the client (may return a Promise); `log(text)` reports to stderr. */
  constructor(records, { write, log = () => {}, realtime = false }) {
    this.#write = write;
    this.#log = log;
    this.#realtime = realtime;
    const { prelude, segments } = segment(records);
    this.#prelude = prelude;
    for (const s of segments) {
      const key = `${s.op.kind} ${s.op.method}`;
      if (!this.#byMethod.has(key)) this.#byMethod.set(key, []);
      this.#byMethod.get(key).push(s);
    }
  }

  /** Play what the agent sent before the client said anything. */
  start() {
    this.#enqueue({ op: null, events: this.#prelude });
    return this.#chain;
  }

  /** Everything queued so far has been played (or is waiting for an answer). */
  idle() {
    return this.#chain;
  }

  /** One line from the live client. */
  receive(line) {
    if (line.trim() === '') return;
    let msg;
    try {
      msg = JSON.parse(line);
    } catch {
      this.#log(`ignoring a line that is not JSON: ${line.slice(0, 120)}`);
      return;
    }
    if (msg.method === undefined) return this.#onAnswer(msg);
    const isRequest = msg.id !== undefined && msg.id !== null;
    const queue = this.#byMethod.get(`${isRequest ? 'request' : 'notification'} ${msg.method}`);
    const next = queue?.shift();
    if (!next) return this.#unmatched(msg, isRequest);
    if (isRequest) {
      this.#liveIds.set(idKey(next.op.id), msg.id);
      this.#openLive.set(idKey(msg.id), { id: msg.id, method: msg.method });
    }
    this.#enqueue(next);
  }

  #enqueue(seg) {
    this.#chain = this.#chain.then(() => this.#play(seg));
  }

  async #play({ op, events }) {
    let previousTime = op?.time;
    for (const record of events) {
      if (record.direction === 'send') {
        // The client's recorded answer to an agent request: wait for the live one.
        if (
          (record.kind === 'response' || record.kind === 'error') &&
          this.#emittedAgentRequests.has(idKey(record.id))
        ) {
          await this.#answerTo(record.id);
        }
        previousTime = record.time;
        continue;
      }
      if (this.#realtime && previousTime !== undefined) {
        await sleep(Math.min(Math.max(record.time - previousTime, 0), MAX_PAUSE_MS));
      }
      previousTime = record.time;
      await this.#emit(record);
    }
  }

  async #emit(record) {
    if (record.kind === 'response' || record.kind === 'error') {
      const live = this.#liveIds.get(idKey(record.id));
      if (live === undefined) return; // answers a request the live client never made
      const msg = JSON.parse(record.payload);
      msg.id = live;
      this.#openLive.delete(idKey(live));
      return this.#write(JSON.stringify(msg));
    }
    if (record.kind === 'request') this.#emittedAgentRequests.add(idKey(record.id));
    return this.#write(record.payload);
  }

  #answerTo(id) {
    const key = idKey(id);
    if (this.#answers.has(key)) return Promise.resolve(this.#answers.get(key));
    return new Promise((resolve) => this.#answerWaiters.set(key, resolve));
  }

  #onAnswer(msg) {
    const key = idKey(msg.id);
    if (!this.#emittedAgentRequests.has(key)) {
      this.#log(`ignoring an answer to unknown request id ${key}`);
      return;
    }
    this.#answers.set(key, msg);
    const wake = this.#answerWaiters.get(key);
    this.#answerWaiters.delete(key);
    wake?.(msg);
  }

  #unmatched(msg, isRequest) {
    if (isRequest) {
      this.#log(`no recorded ${msg.method} request left: answering with an error`);
      this.#enqueueWrite({
        jsonrpc: '2.0',
        id: msg.id,
        error: { code: -32601, message: `acp-native replay: the recording has no (more) ${msg.method} requests` },
      });
      return;
    }
    if (msg.method === 'session/cancel') {
      // Not in the recording: end the open turns the way an agent would.
      for (const [key, open] of this.#openLive) {
        if (open.method !== 'session/prompt') continue;
        this.#openLive.delete(key);
        this.#enqueueWrite({ jsonrpc: '2.0', id: open.id, result: { stopReason: 'cancelled' } });
      }
      return;
    }
    this.#log(`no recorded ${msg.method} notification left: ignored`);
  }

  #enqueueWrite(msg) {
    this.#chain = this.#chain.then(() => this.#write(JSON.stringify(msg)));
  }
}

/** Run the replay agent on this process's stdio until stdin closes. */
export async function runReplay({
  file,
  realtime = false,
  stdin = process.stdin,
  stdout = process.stdout,
  stderr = process.stderr,
}) {
  let recording;
  try {
    recording = await readRecording(file);
  } catch (err) {
    if (!(err instanceof RecordingError)) throw err;
    stderr.write(`acp-native replay: ${sanitizeForTerminal(err.message)}\n`);
    return 1;
  }
  const write = (line) =>
    new Promise((resolve) => {
      // The protocol goes to a client; on a terminal (someone watching), recorded lines are shown inert.
      if (stdout.write(`${stdout.isTTY ? sanitizeForTerminal(line, { singleLine: true }) : line}\n`)) resolve();
      else stdout.once('drain', resolve);
    });
  const replayer = new Replayer(recording.records, {
    write,
    // What the live client sent is quoted in these: shown as text.
    log: (text) => stderr.write(`acp-native replay: ${sanitizeForTerminal(text, { singleLine: true })}\n`),
    realtime,
  });
  replayer.start();
  const rl = createInterface({ input: stdin, crlfDelay: Infinity });
  rl.on('line', (line) => replayer.receive(line));
  await new Promise((resolve) => rl.once('close', resolve));
  return 0;
}
