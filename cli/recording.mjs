// The recording file format shared by `record`, `replay` and `export`:
// NDJSON, a header line, then one AcpClient trace record per wire message
// (the same shape `client.saveHistory()` writes, so those files replay too).
//
// A recording may come from anywhere: it is read as a stream, one line at
// a time, within RECORDING_LIMITS whatever the file holds; a line that is
// not a trace record is a RecordingError naming the file and line.
import { createReadStream } from 'node:fs';

export const FORMAT = 'acp-native-recording';
export const VERSION = 1;

/**
 * maxLineBytes: a longer line is not read into memory (a whole 64 MiB
 * wire line, the client's default limit, escaped into a record fits);
 * maxDepth: a payload nested deeper is not parsed into objects;
 * maxValues: nor one with more values (members and elements);
 * maxReplayBytes: what `replay` keeps in memory (payloads, and
 * RECORD_OVERHEAD bytes per message).
 */
export const RECORDING_LIMITS = Object.freeze({
  maxLineBytes: 128 * 1024 * 1024,
  maxDepth: 512,
  maxValues: 1_000_000,
  maxReplayBytes: 256 * 1024 * 1024,
});

// What one record kept for replay costs besides its payload (its object, for the replay budget).
const RECORD_OVERHEAD = 256;
const KINDS = new Set(['request', 'response', 'error', 'notification', 'invalid']);

/** The first line of a recording: what was recorded, and when. */
export function header({ agent, cwd }) {
  return {
    format: FORMAT,
    version: VERSION,
    startedAt: new Date().toISOString(),
    command: agent.command,
    args: agent.args,
    cwd,
  };
}

/** A recording that cannot be read; the message says which line and why. */
export class RecordingError extends Error {
  constructor(message, line) {
    super(message);
    this.name = 'RecordingError';
    if (line !== undefined) this.line = line;
  }
}

/**
 * The lines of `path` as `{ line, text }` (number from 1, without the line
 * end), or `{ line, tooLong: true, bytes }` for one over `maxLineBytes`,
 * whose bytes are counted but never held.
 */
export async function* readLines(path, maxLineBytes) {
  let parts = [];
  let size = 0;
  let tooLong = false;
  let line = 1;
  const finish = () => {
    const item = tooLong ? { line, tooLong: true, bytes: size } : { line, text: decode(parts) };
    parts = [];
    size = 0;
    tooLong = false;
    line++;
    return item;
  };
  let stream;
  try {
    stream = createReadStream(path, { highWaterMark: 1024 * 1024 });
    for await (const chunk of stream) {
      for (let start = 0; ; ) {
        const nl = chunk.indexOf(10, start);
        const piece = chunk.subarray(start, nl < 0 ? chunk.length : nl);
        size += piece.length;
        if (!tooLong && size > maxLineBytes) {
          tooLong = true;
          parts = [];
        } else if (!tooLong && piece.length > 0) parts.push(piece);
        if (nl < 0) break;
        yield finish();
        start = nl + 1;
      }
    }
  } catch (err) {
    if (err instanceof RecordingError) throw err;
    throw new RecordingError(`cannot read ${path}: ${err.message}`);
  } finally {
    stream?.destroy();
  }
  if (size > 0) yield finish();
}

function decode(parts) {
  const text = parts.length === 1 ? parts[0].toString('utf8') : Buffer.concat(parts).toString('utf8');
  return text.endsWith('\r') ? text.slice(0, -1) : text;
}

/**
 * Why JSON `text` is not parsed into objects, checked on its text before
 * parsing: `'tooDeep'` (arrays/objects nested deeper than `maxDepth`),
 * `'tooWide'` (more than `maxValues` values: a tree costs many times its
 * text, `[0,0,…]` or `[{},{},…]` tens of bytes a value), or null.
 */
export function tooBigToParse(text, maxDepth, maxValues) {
  let depth = 0;
  let values = 1;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++;
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x2c) {
      if (++values > maxValues) return 'tooWide';
    } else if (c === 0x7b || c === 0x5b) {
      if (++depth > maxDepth) return 'tooDeep';
      if (++values > maxValues) return 'tooWide';
    } else if (c === 0x7d || c === 0x5d) depth--;
  }
  return null;
}

/**
 * The entries of a recording, checked: `{ line, header }` for a metadata
 * line (no `direction`), `{ line, record, msg }` for a trace record
 * (`msg` its parsed payload; undefined for kind `invalid`), or
 * `{ line, skipped: 'tooLong' | 'tooDeep' | 'tooWide' }` for a line over the limits.
 * Throws RecordingError (file:line and why) for a line that is not JSON,
 * not a trace record, or whose payload is cut or not JSON.
 */
export async function* recordingEntries(path, limits = RECORDING_LIMITS) {
  const {
    maxLineBytes = RECORDING_LIMITS.maxLineBytes,
    maxDepth = RECORDING_LIMITS.maxDepth,
    maxValues = RECORDING_LIMITS.maxValues,
  } = limits;
  for await (const item of readLines(path, maxLineBytes)) {
    const at = `${path}:${item.line}`;
    if (item.tooLong) {
      yield { line: item.line, skipped: 'tooLong', bytes: item.bytes };
      continue;
    }
    if (item.text.trim() === '') continue;
    // The record wraps its payload in a string; what else it holds is checked too.
    const recordTooBig = tooBigToParse(item.text, maxDepth, maxValues);
    if (recordTooBig) {
      yield { line: item.line, skipped: recordTooBig };
      continue;
    }
    let value;
    try {
      value = JSON.parse(item.text);
    } catch (err) {
      throw new RecordingError(`${at}: not JSON (${err.message})`, item.line);
    }
    if (value === null || typeof value !== 'object' || Array.isArray(value))
      throw new RecordingError(`${at}: not a JSON object`, item.line);
    if (value.direction === undefined) {
      yield { line: item.line, header: value };
      continue;
    }
    if (value.direction !== 'send' && value.direction !== 'receive')
      throw new RecordingError(`${at}: direction must be "send" or "receive"`, item.line);
    if (typeof value.payload !== 'string') throw new RecordingError(`${at}: no payload`, item.line);
    if (!KINDS.has(value.kind))
      throw new RecordingError(`${at}: kind must be one of ${[...KINDS].join(', ')}`, item.line);
    if (value.truncated) {
      throw new RecordingError(
        `${at}: the payload was cut to ${value.payload.length} characters; record with \`acp-native record\` (whole payloads)`,
        item.line,
      );
    }
    if (value.kind === 'invalid') {
      yield { line: item.line, record: value, msg: undefined };
      continue;
    }
    const payloadTooBig = tooBigToParse(value.payload, maxDepth, maxValues);
    if (payloadTooBig) {
      yield { line: item.line, skipped: payloadTooBig };
      continue;
    }
    let msg;
    try {
      msg = JSON.parse(value.payload);
    } catch (err) {
      throw new RecordingError(`${at}: the payload is not JSON, cut or damaged (${err.message})`, item.line);
    }
    if (msg === null || typeof msg !== 'object' || Array.isArray(msg))
      throw new RecordingError(`${at}: the payload is not a JSON-RPC message`, item.line);
    // A response may carry `id: null` (JSON-RPC, an unreadable request); a request needs one.
    if ((value.kind === 'response' || value.kind === 'error') && !Object.hasOwn(msg, 'id'))
      throw new RecordingError(`${at}: a ${value.kind} without an id`, item.line);
    if (value.kind === 'request' && (msg.id === undefined || msg.id === null))
      throw new RecordingError(`${at}: a request without an id`, item.line);
    if ((value.kind === 'request' || value.kind === 'notification') && typeof msg.method !== 'string') {
      throw new RecordingError(`${at}: a ${value.kind} without a method`, item.line);
    }
    yield { line: item.line, record: value, msg };
  }
}

/**
 * Read a recording to replay it: `{ header, records }` (each record with
 * its `line`). Every line must be a whole trace record within the limits,
 * and the payloads kept at most `maxReplayBytes`.
 */
export async function readRecording(path, limits = RECORDING_LIMITS) {
  const {
    maxLineBytes = RECORDING_LIMITS.maxLineBytes,
    maxDepth = RECORDING_LIMITS.maxDepth,
    maxValues = RECORDING_LIMITS.maxValues,
    maxReplayBytes = RECORDING_LIMITS.maxReplayBytes,
  } = limits;
  let head = null;
  const records = [];
  let bytes = 0;
  for await (const entry of recordingEntries(path, { maxLineBytes, maxDepth, maxValues })) {
    if (entry.skipped === 'tooWide')
      throw new RecordingError(`${path}:${entry.line}: more than ${maxValues} JSON values`, entry.line);
    if (entry.skipped === 'tooLong')
      throw new RecordingError(`${path}:${entry.line}: a line of more than ${maxLineBytes} bytes`, entry.line);
    if (entry.skipped === 'tooDeep')
      throw new RecordingError(`${path}:${entry.line}: nested deeper than ${maxDepth}`, entry.line);
    if (entry.header) {
      head ??= entry.header;
      continue;
    }
    bytes += entry.record.payload.length + RECORD_OVERHEAD;
    if (bytes > maxReplayBytes)
      throw new RecordingError(
        `${path}:${entry.line}: more than ${maxReplayBytes} bytes of messages to replay (payloads and ${RECORD_OVERHEAD} bytes per message)`,
        entry.line,
      );
    const { direction, kind, method, id, time, payload } = entry.record;
    records.push({ direction, kind, method, id, time, payload, line: entry.line });
  }
  if (records.length === 0) throw new RecordingError(`${path}: no wire messages`);
  return { header: head, records };
}
