// The recording file format shared by `record` and `replay`: NDJSON, a
// header line, then one AcpClient trace record per wire message (the same
// shape `client.saveHistory()` writes, so those files replay too).
import { readFileSync } from 'node:fs';

export const FORMAT = 'acp-native-recording';
export const VERSION = 1;

/** The first line of a recording: what was recorded, and when. */
export function header({ agent, cwd }) {
  return { format: FORMAT, version: VERSION, startedAt: new Date().toISOString(), command: agent.command, args: agent.args, cwd };
}

/** A recording that cannot be replayed; the message says which line and why. */
export class RecordingError extends Error {}

/**
 * Read a recording: `{ header, records }`. Lines without `direction` are
 * metadata (the header). A record whose payload was cut cannot be replayed.
 */
export function readRecording(path) {
  let text;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new RecordingError(`cannot read ${path}: ${err.message}`);
  }
  let head = null;
  const records = [];
  text.split('\n').forEach((line, i) => {
    if (line.trim() === '') return;
    let value;
    try {
      value = JSON.parse(line);
    } catch {
      throw new RecordingError(`${path}:${i + 1}: not JSON`);
    }
    if (value?.direction === undefined) {
      head ??= value;
      return;
    }
    if (value.direction !== 'send' && value.direction !== 'receive') {
      throw new RecordingError(`${path}:${i + 1}: direction must be "send" or "receive"`);
    }
    if (typeof value.payload !== 'string') throw new RecordingError(`${path}:${i + 1}: no payload`);
    if (value.truncated) {
      throw new RecordingError(`${path}:${i + 1}: the payload was cut to ${value.payload.length} characters; record with \`acp-native record\` (whole payloads)`);
    }
    records.push({ ...value, line: i + 1 });
  });
  if (records.length === 0) throw new RecordingError(`${path}: no wire messages`);
  return { header: head, records };
}
