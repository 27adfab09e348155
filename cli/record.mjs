// `acp-native record`: a chat session that also writes every wire message
// (AcpClient's `trace` hook, whole payloads) to an NDJSON file.
import { closeSync, openSync, writeSync } from 'node:fs';
import { resolve } from 'node:path';
import { runChat } from './chat.mjs';
import { header } from './recording.mjs';

export async function runRecord({ agent, cwd, showStderr, out, clientOptions = {} }) {
  let fd;
  try {
    fd = openSync(out, 'w');
  } catch (err) {
    process.stderr.write(`acp-native: cannot write the recording: ${err.message}\n`);
    return 1;
  }
  let count = 0;
  // One synchronous write per message: the file is complete up to the last
  // message even if this process is killed.
  const write = (value) => writeSync(fd, `${JSON.stringify(value)}\n`);
  try {
    write(header({ agent, cwd: resolve(cwd ?? '.') }));
    const trace = (record) => {
      write(record);
      count++;
    };
    return await runChat({ agent, cwd, showStderr, clientOptions: { ...clientOptions, trace, traceMaxPayloadBytes: Infinity } });
  } finally {
    closeSync(fd);
    process.stderr.write(`acp-native: recorded ${count} messages to ${out}\n`);
  }
}
