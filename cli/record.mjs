// `acp-native record`: a chat session that also writes every wire message
// (AcpClient's `trace` hook, whole payloads) to an NDJSON file.
import { createRequire } from 'node:module';
import { resolve } from 'node:path';
import { runChat } from './chat.mjs';
import { header } from './recording.mjs';

const { SafeFileWriter } = createRequire(import.meta.url)('../lib/safe-write.js');
const { sanitizeForTerminal } = createRequire(import.meta.url)('../lib/sanitize.js');

export async function runRecord({ agent, cwd, showStderr, out, clientOptions = {} }) {
  let file;
  try {
    // A temporary file next to `out`, renamed over it at the end: a
    // symlink, FIFO or device at `out` is refused before the chat starts.
    file = new SafeFileWriter(out);
  } catch (err) {
    process.stderr.write(`acp-native: cannot write the recording: ${sanitizeForTerminal(err.message)}\n`);
    return 1;
  }
  let count = 0;
  // One synchronous write per message (to the file we created): it is
  // complete up to the last message even if this process is killed.
  const write = (value) => file.write(`${JSON.stringify(value)}\n`);
  let code = 1;
  try {
    write(header({ agent, cwd: resolve(cwd ?? '.') }));
    const trace = (record) => {
      write(record);
      count++;
    };
    code = await runChat({
      agent,
      cwd,
      showStderr,
      clientOptions: { ...clientOptions, trace, traceMaxPayloadBytes: Infinity },
    });
  } finally {
    try {
      file.commit();
      process.stderr.write(`acp-native: recorded ${count} messages to ${sanitizeForTerminal(out)}\n`);
    } catch (err) {
      process.stderr.write(
        `acp-native: cannot write the recording: ${sanitizeForTerminal(err.message)}; it is in ${sanitizeForTerminal(file.tempPath)}\n`,
      );
      code = 1;
    }
  }
  return code;
}
