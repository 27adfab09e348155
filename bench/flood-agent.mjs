#!/usr/bin/env node
// A minimal ACP agent built to be faster than any client reading it: every
// update line is built once and written in large chunks. Prompt text picks
// the load:
//   small:N          N session/update lines with a 64-byte text chunk
//   large:N:BYTES    N updates with a BYTES-long text chunk
//   permission:N     N sequential session/request_permission round trips
//   ui:N:M:T         "stream to a UI": N 64-byte text chunks across M
//                    messages, each message after a tool call, plus T
//                    tool_call_updates spread over the calls
//   real:T           turn T of the realistic scenario named by
//                    `--real NAME` (bench/real-turns.mjs), built at start
// `_bench/ping` is answered at once, with the agent's monotonic clock (ns,
// the same clock as the host's process.hrtime) when it wrote the answer. With `--standalone SCRIPT` it writes
// that flood to stdout without the protocol (for timing it into /dev/null).
import { createInterface } from 'node:readline';
import { turns } from './real-turns.mjs';

const CHUNK_BYTES = 1 << 20;

function updateLine(sessionId, textBytes, i) {
  // Same length for every i: a zero-padded message id.
  const text = 'x'.repeat(textBytes);
  return (
    JSON.stringify({
      jsonrpc: '2.0',
      method: 'session/update',
      params: {
        sessionId,
        update: {
          sessionUpdate: 'agent_message_chunk',
          messageId: `msg_${String(i).padStart(8, '0')}`,
          content: { type: 'text', text },
        },
      },
    }) + '\n'
  );
}

/** Buffers of whole lines, about CHUNK_BYTES each, for `count` updates. */
function floodChunks(sessionId, count, textBytes) {
  const line = Buffer.from(updateLine(sessionId, textBytes, 0));
  const perChunk = Math.max(1, Math.floor(CHUNK_BYTES / line.length));
  const full = Buffer.concat(Array.from({ length: perChunk }, () => line));
  const chunks = [];
  for (let left = count; left > 0; left -= perChunk) {
    chunks.push(left >= perChunk ? full : full.subarray(0, left * line.length));
  }
  return { chunks, lineBytes: line.length };
}

/** The "stream to a UI" load (see the header); returns the bytes written. */
async function uiFlood(out, sessionId, chunks, messages, toolUpdates) {
  const line = (update) =>
    JSON.stringify({ jsonrpc: '2.0', method: 'session/update', params: { sessionId, update } }) + '\n';
  const perMessage = Math.floor(chunks / messages);
  const updatesPerTool = Math.floor(toolUpdates / messages);
  let bytes = 0;
  for (let m = 0; m < messages; m++) {
    const toolCallId = `call_${m}`;
    const parts = [
      line({ sessionUpdate: 'tool_call', toolCallId, title: `Tool ${m}`, kind: 'execute', status: 'pending' }),
    ];
    const chunk = line({
      sessionUpdate: 'agent_message_chunk',
      messageId: `msg_${m}`,
      content: { type: 'text', text: `${m}`.padEnd(64, 'x') },
    });
    const every = Math.max(1, Math.floor(perMessage / Math.max(1, updatesPerTool)));
    let sentUpdates = 0;
    for (let i = 0; i < perMessage; i++) {
      parts.push(chunk);
      if ((i + 1) % every === 0 && sentUpdates < updatesPerTool) {
        sentUpdates++;
        const done = sentUpdates === updatesPerTool;
        parts.push(
          line({
            sessionUpdate: 'tool_call_update',
            toolCallId,
            status: done ? 'completed' : 'in_progress',
            rawOutput: { progress: sentUpdates },
          }),
        );
      }
    }
    const buf = Buffer.from(parts.join(''));
    bytes += buf.length;
    for (let at = 0; at < buf.length; at += CHUNK_BYTES) await write(out, buf.subarray(at, at + CHUNK_BYTES));
  }
  return bytes;
}

function parseScript(text) {
  const [kind, n, bytes] = text.trim().split(':');
  return { kind, count: Number(n), bytes: Number(bytes ?? 64) };
}

async function write(out, buf) {
  if (!out.write(buf)) await new Promise((r) => out.once('drain', r));
}

/** Write the updates; returns the bytes written. */
async function flood(out, sessionId, count, textBytes) {
  const { chunks, lineBytes } = floodChunks(sessionId, count, textBytes);
  for (const chunk of chunks) await write(out, chunk);
  return count * lineBytes;
}

/**
 * The realistic scenario's turns, built before serving (their generation
 * is not the clients' cost): per turn, its lines and how many updates.
 */
function realTurns(name, sessionId) {
  return turns(name).map((make) => {
    const lines = [];
    for (const update of make())
      lines.push(JSON.stringify({ jsonrpc: '2.0', method: 'session/update', params: { sessionId, update } }));
    return { buf: Buffer.from(lines.join('\n') + '\n'), updates: lines.length };
  });
}

async function writeAll(out, buf) {
  for (let at = 0; at < buf.length; at += CHUNK_BYTES) await write(out, buf.subarray(at, at + CHUNK_BYTES));
}

const realAt = process.argv.indexOf('--real');
const real = realAt === -1 ? null : realTurns(process.argv[realAt + 1], 'sess_1');

const standaloneAt = process.argv.indexOf('--standalone');
if (standaloneAt !== -1) {
  const script = process.argv[standaloneAt + 1];
  const { bytes } = parseScript(script);
  const count = real !== null ? real.reduce((n, t) => n + t.updates, 0) : parseScript(script).count;
  const started = process.hrtime.bigint();
  if (real !== null) for (const t of real) await writeAll(process.stdout, t.buf);
  else await flood(process.stdout, 'sess_1', count, bytes);
  await new Promise((r) => process.stdout.write('', r));
  const ms = Number(process.hrtime.bigint() - started) / 1e6;
  process.stderr.write(JSON.stringify({ count, ms, msgsPerSec: count / (ms / 1000) }) + '\n');
} else {
  serve();
}

function serve() {
  const out = process.stdout;
  const send = (msg) => out.write(JSON.stringify(msg) + '\n');
  const waiting = new Map();
  let nextId = 0;
  const ask = (method, params) =>
    new Promise((resolve) => {
      const id = ++nextId;
      waiting.set(id, resolve);
      send({ jsonrpc: '2.0', id, method, params });
    });

  async function prompt(msg) {
    const { sessionId } = msg.params;
    const { kind, count, bytes } = parseScript(msg.params.prompt[0].text);
    let floodBytes = 0;
    let updates = 0;
    if (kind === 'real') {
      const t = real[count];
      await writeAll(out, t.buf);
      floodBytes = t.buf.length;
      updates = t.updates;
    } else if (kind === 'ui') {
      const [, n, m, t] = msg.params.prompt[0].text.trim().split(':').map(Number);
      floodBytes = await uiFlood(out, sessionId, n, m, t);
    } else if (kind === 'small' || kind === 'large') {
      floodBytes = await flood(out, sessionId, count, kind === 'small' ? 64 : bytes);
    } else if (kind === 'permission') {
      const params = {
        sessionId,
        toolCall: { toolCallId: 'call_1', title: 'bench', kind: 'execute', status: 'pending' },
        options: [
          { optionId: 'allow', name: 'Allow', kind: 'allow_once' },
          { optionId: 'reject', name: 'Reject', kind: 'reject_once' },
        ],
      };
      for (let i = 0; i < count; i++) await ask('session/request_permission', params);
    }
    send({ jsonrpc: '2.0', id: msg.id, result: { stopReason: 'end_turn', _meta: { floodBytes, updates } } });
  }

  const rl = createInterface({ input: process.stdin, crlfDelay: Infinity });
  rl.on('line', (line) => {
    if (!line) return;
    const msg = JSON.parse(line);
    if (msg.method === undefined) {
      waiting.get(msg.id)?.(msg);
      waiting.delete(msg.id);
      return;
    }
    switch (msg.method) {
      case 'initialize':
        return send({
          jsonrpc: '2.0',
          id: msg.id,
          result: {
            protocolVersion: 1,
            agentCapabilities: {},
            authMethods: [],
            agentInfo: { name: 'flood-agent', version: '1.0.0' },
          },
        });
      case 'session/new':
        return send({ jsonrpc: '2.0', id: msg.id, result: { sessionId: 'sess_1' } });
      case 'session/prompt':
        return void prompt(msg);
      case '_bench/ping':
        return send({ jsonrpc: '2.0', id: msg.id, result: { at: String(process.hrtime.bigint()) } });
      default:
        if (msg.id !== undefined)
          send({ jsonrpc: '2.0', id: msg.id, error: { code: -32601, message: 'Method not found' } });
    }
  });
  rl.on('close', () => process.exit(0));
}
