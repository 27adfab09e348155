#!/usr/bin/env node
// A scriptable ACP agent for tests, the demo and benchmarks.
//
// The text of a prompt is a script: whitespace-separated commands run in
// order, then the turn ends (`end_turn`, or `cancelled` if the session was
// cancelled). See mock-agent/README.md for the command list.
//
// Flags: --string-ids (agent→client ids like agentao's "srv_<hex>"),
// --protocol-version N, --banner (noise on stdout at start),
// --stderr-before-init BYTES, --stderr-line TEXT, --ignore-eof, --ignore-sigterm, --wire-log FILE,
// --require-auth (an auth method; session/new answers -32000 until authenticate).
// --grandchild (starts a node that sleeps forever; its pid in initialize's _meta).
// Sessions that outlive the process: --sessions-dir DIR keeps each session's
// history (prompts and updates, written before they are sent) so a new
// process can `session/load` it; --no-load withholds `loadSession`;
// --resume offers `session/resume` (and `session/list`, `session/fork`,
// `session/delete`).
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { appendFileSync, existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';

const argv = process.argv.slice(2);
let authenticated = false; // --require-auth: session/new answers -32000 until `authenticate`
const flag = (name) => argv.includes(name);
const value = (name, fallback) => {
  const i = argv.indexOf(name);
  return i >= 0 ? argv[i + 1] : fallback;
};

const stringIds = flag('--string-ids');
// No `<kind>=<reply>` chunks for permission and request replies (the demo).
const reports = !flag('--no-reports');
const protocolVersion = JSON.parse(value('--protocol-version', '1'));
const stderrBeforeInit = Number(value('--stderr-before-init', '0'));
if (flag('--ignore-sigterm')) process.on('SIGTERM', () => {});
// Never ends by itself, and ignores its stdin: only a kill of the tree stops it.
const grandchild = flag('--grandchild')
  ? spawn(process.execPath, ['-e', 'setInterval(() => {}, 1e9)'], { stdio: 'ignore' })
  : null;
// --wire-log FILE: every line read and written, as {dir: 'in'|'out', line}.
const wireLog = value('--wire-log');
const logWire = (dir, text) => {
  for (const line of text.split('\n')) if (line) appendFileSync(wireLog, JSON.stringify({ dir, line }) + '\n');
};
if (wireLog) {
  const write = process.stdout.write.bind(process.stdout);
  process.stdout.write = (chunk, ...rest) => {
    logWire('out', String(chunk));
    return write(chunk, ...rest);
  };
}
if (flag('--banner')) process.stdout.write('mock-agent 1.0 starting (this line is not JSON)\n');
// --stderr-line TEXT: one line on stderr at start (crash reports, stderr tails).
if (value('--stderr-line')) process.stderr.write(`${value('--stderr-line')}\n`);

const sessionsDir = value('--sessions-dir');
const historyFile = (sessionId) => join(sessionsDir, `${encodeURIComponent(sessionId)}.ndjson`);
/** Keep an update in the session's history (before it is sent: a kill -9 loses none that was seen). */
const remember = (sessionId, u) => {
  if (sessionsDir && typeof sessionId === 'string') appendFileSync(historyFile(sessionId), JSON.stringify(u) + '\n');
};
const send = (msg) => {
  if (msg.method === 'session/update') remember(msg.params?.sessionId, msg.params?.update);
  return process.stdout.write(JSON.stringify(msg) + '\n');
};
const respond = (id, result) => send({ jsonrpc: '2.0', id, result });
const fail = (id, code, message, data) =>
  send({ jsonrpc: '2.0', id, error: data === undefined ? { code, message } : { code, message, data } });
const update = (sessionId, u) => ({ jsonrpc: '2.0', method: 'session/update', params: { sessionId, update: u } });
const textChunk = (kind, text) => ({ sessionUpdate: kind, content: { type: 'text', text } });

let nextRequest = 1;
const waiting = new Map(); // our request id → resolve
/** Send request METHOD (after the text `before`, in the same write). */
// `swap`: [placeholder JSON, text] put in the line as it is (a big value
// costs the agent no tree).
function ask(method, params, before = '', swap = undefined) {
  const id = stringIds ? `srv_${(nextRequest++).toString(16).padStart(16, '0')}` : nextRequest++;
  let line = JSON.stringify({ jsonrpc: '2.0', id, method, params });
  if (swap) line = line.replace(swap[0], () => swap[1]);
  process.stdout.write(before + line + '\n');
  return new Promise((resolve) => waiting.set(JSON.stringify(id), resolve));
}

const sessions = new Map(); // id → { cancelled, onCancel: [] }
let sessionCounter = 0;
const received = []; // notifications the client sent, for `_mock/received`

function session(sessionId) {
  let s = sessions.get(sessionId);
  if (!s) sessions.set(sessionId, (s = { cancelled: false, onCancel: [] }));
  return s;
}

/** One update of every stable variant, a tool call's lifecycle included. */
function everyVariant() {
  return [
    { sessionUpdate: 'user_message_chunk', content: { type: 'text', text: 'Fix the build' } },
    { sessionUpdate: 'agent_thought_chunk', content: { type: 'text', text: 'Looking at ' } },
    { sessionUpdate: 'agent_thought_chunk', content: { type: 'text', text: 'the logs' } },
    { sessionUpdate: 'agent_message_chunk', messageId: 'msg_1', content: { type: 'text', text: 'I will ' } },
    { sessionUpdate: 'agent_message_chunk', messageId: 'msg_1', content: { type: 'text', text: 'read the file.' } },
    {
      sessionUpdate: 'tool_call',
      toolCallId: 'call_1',
      title: 'Read Makefile',
      kind: 'read',
      status: 'pending',
      locations: [{ path: '/repo/Makefile', line: 3 }],
      rawInput: { path: '/repo/Makefile' },
    },
    { sessionUpdate: 'tool_call_update', toolCallId: 'call_1', status: 'in_progress' },
    {
      sessionUpdate: 'tool_call_update',
      toolCallId: 'call_1',
      status: 'completed',
      content: [{ type: 'content', content: { type: 'text', text: 'all: build' } }],
      rawOutput: { bytes: 10 },
    },
    {
      sessionUpdate: 'plan',
      entries: [
        { content: 'Read the Makefile', priority: 'high', status: 'completed' },
        { content: 'Fix the target', priority: 'medium', status: 'pending' },
      ],
    },
    { sessionUpdate: 'available_commands_update', availableCommands: [{ name: 'test', description: 'Run the tests' }] },
    { sessionUpdate: 'current_mode_update', currentModeId: 'plan' },
    {
      sessionUpdate: 'config_option_update',
      configOptions: [
        {
          id: 'model',
          name: 'Model',
          type: 'select',
          currentValue: 'fast',
          options: [{ value: 'fast', name: 'Fast' }],
        },
      ],
    },
    { sessionUpdate: 'session_info_update', title: 'Fix the build', updatedAt: '2026-01-01T00:00:00Z' },
    { sessionUpdate: 'usage_update', used: 1200, size: 200000, cost: { amount: 0.01, currency: 'USD' } },
    { sessionUpdate: 'notice', severity: 'info', title: 'Context is getting long' },
    { sessionUpdate: 'compaction_update', compactionId: 'cmp_1', status: 'started' },
    {
      sessionUpdate: 'compaction_summary_chunk',
      compactionId: 'cmp_1',
      content: { type: 'text', text: 'Summary so far' },
    },
    { sessionUpdate: 'compaction_update', compactionId: 'cmp_1', status: 'completed' },
    {
      sessionUpdate: 'agent_message_chunk',
      messageId: 'msg_2',
      content: { type: 'text', text: 'Done.' },
      _meta: { vendor: 1 },
    },
    { sessionUpdate: 'hologram_projection', schema_version: 1, beam: { color: 'blue' } },
  ];
}

async function runScript(id, params) {
  const sessionId = params.sessionId;
  const s = session(sessionId);
  s.cancelled = false;
  const blocks = params.prompt ?? [];
  const script = (blocks[0]?.text ?? '').split(/\s+/).filter(Boolean);
  const client = clientCalls(s, sessionId);
  for (const command of script) {
    if (s.cancelled) break;
    const [name, ...rest] = command.split(':');
    const arg = rest.join(':');
    switch (name) {
      case 'text':
        for (let i = 0; i < Number(arg || 1); i++)
          send(update(sessionId, textChunk('agent_message_chunk', `chunk${i} `)));
        break;
      case 'say':
        send(update(sessionId, textChunk('agent_message_chunk', arg.replaceAll('_', ' '))));
        break;
      case 'thought':
        for (let i = 0; i < Number(arg || 1); i++)
          send(update(sessionId, textChunk('agent_thought_chunk', `thinking${i} `)));
        break;
      case 'tool':
        send(
          update(sessionId, {
            sessionUpdate: 'tool_call',
            toolCallId: 'call_read',
            title: 'Read README.md',
            kind: 'read',
            status: 'pending',
          }),
        );
        send(
          update(sessionId, {
            sessionUpdate: 'tool_call_update',
            toolCallId: 'call_read',
            status: 'completed',
            content: [{ type: 'content', content: { type: 'text', text: '# README' } }],
          }),
        );
        break;
      case 'plan':
        send(
          update(sessionId, {
            sessionUpdate: 'plan',
            entries: [
              { content: 'Look around', priority: 'high', status: 'completed' },
              { content: 'Write the code', priority: 'medium', status: 'in_progress' },
            ],
          }),
        );
        break;
      case 'all':
        // Every stable session/update variant once (session views, export).
        for (const u of everyVariant()) send(update(sessionId, u));
        break;
      case 'updates': {
        // Each line of the NDJSON file (URI-encoded path) is one `update`.
        const text = readFileSync(decodeURIComponent(arg), 'utf8');
        for (const line of text.split('\n')) {
          if (line === '') continue;
          if (!process.stdout.write(JSON.stringify(update(sessionId, JSON.parse(line))) + '\n')) {
            await new Promise((r) => process.stdout.once('drain', r));
          }
        }
        break;
      }
      case 'future':
        // A variant and fields no client knows yet: must pass through.
        send(update(sessionId, { sessionUpdate: 'hologram_projection', schema_version: 1, beam: { color: 'blue' } }));
        break;
      case 'permission': {
        const toolCall = {
          toolCallId: 'call_shell',
          title: 'Run `rm -rf build`',
          kind: 'execute',
          status: 'pending',
          rawInput: { command: 'rm -rf build' },
        };
        send(update(sessionId, { sessionUpdate: 'tool_call', ...toolCall }));
        // `permission:N`: the request's rawInput is N zeros, `[0,0,…]`.
        const zeros = Number(arg) > 0 ? ['"$zeros"', `[${'0,'.repeat(Number(arg) - 1)}0]`] : undefined;
        const reply = await ask(
          'session/request_permission',
          {
            sessionId,
            toolCall: zeros ? { ...toolCall, rawInput: '$zeros' } : toolCall,
            options: [
              { optionId: 'allow_once', name: 'Allow once', kind: 'allow_once' },
              { optionId: 'allow_always', name: 'Always allow', kind: 'allow_always' },
              { optionId: 'reject_once', name: 'Reject', kind: 'reject_once' },
              { optionId: 'reject_always', name: 'Always reject', kind: 'reject_always' },
            ],
          },
          '',
          zeros,
        );
        const outcome = reply.result?.outcome;
        const allowed = outcome?.outcome === 'selected' && String(outcome.optionId).startsWith('allow');
        send(
          update(sessionId, {
            sessionUpdate: 'tool_call_update',
            toolCallId: 'call_shell',
            status: allowed ? 'completed' : 'failed',
          }),
        );
        if (reports) send(update(sessionId, textChunk('agent_message_chunk', `permission=${JSON.stringify(reply)}`)));
        if (outcome?.outcome === 'cancelled') s.cancelled = true;
        break;
      }
      case 'ext':
      case 'request': {
        const reply = await ask(arg, { sessionId, question: 'Proceed?' });
        if (reports) send(update(sessionId, textChunk('agent_message_chunk', `${name}=${JSON.stringify(reply)}`)));
        if (reply.result?.outcome === 'cancelled' || reply.error?.code === -32800) s.cancelled = true;
        break;
      }
      case 'notify':
        send({ jsonrpc: '2.0', method: arg, params: { sessionId, hello: 'world' } });
        break;
      case 'burst': {
        // One write: the whole burst lands in the pipe at once, right
        // before the response (or before request METHOD, if named).
        const [count, method] = arg.split(':');
        const one = (i) => JSON.stringify(update(sessionId, textChunk('agent_message_chunk', `b${i}`)));
        const lines = [];
        for (let i = 0; i < Number(count); i++) lines.push(one(i));
        const burst = lines.join('\n') + '\n';
        if (!method) process.stdout.write(burst);
        else
          send(
            update(
              sessionId,
              textChunk('agent_message_chunk', `burst=${JSON.stringify(await ask(method, { sessionId }, burst))}`),
            ),
          );
        break;
      }
      case 'interleave': {
        // One write: N chunks each for this session and session OTHER
        // (URI-encoded), alternating line by line.
        const [count, other] = arg.split(':');
        const one = (sid, text) => JSON.stringify(update(sid, textChunk('agent_message_chunk', text)));
        const lines = [];
        for (let i = 0; i < Number(count); i++)
          lines.push(one(sessionId, `a${i}`), one(decodeURIComponent(other), `b${i}`));
        process.stdout.write(lines.join('\n') + '\n');
        break;
      }
      case 'mixed': {
        // One write: N small chunks, one of BIG characters, N small ones.
        const [count, big] = arg.split(':').map(Number);
        const one = (text) => JSON.stringify(update(sessionId, textChunk('agent_message_chunk', text)));
        const small = (tag) => Array.from({ length: count }, (_, i) => one(`${tag}${i}`));
        process.stdout.write([...small('a'), one('x'.repeat(big)), ...small('z')].join('\n') + '\n');
        break;
      }
      case 'big':
        send(update(sessionId, textChunk('agent_message_chunk', 'x'.repeat(Number(arg)))));
        break;
      case 'echo':
        send(update(sessionId, textChunk('agent_message_chunk', blocks[1]?.text ?? '')));
        break;
      case 'noise':
        process.stdout.write('WARNING: something printed to stdout\n');
        break;
      case 'stderr':
        process.stderr.write('e'.repeat(Number(arg)) + '\n');
        break;
      case 'sleep':
        await new Promise((r) => setTimeout(r, Number(arg)));
        break;
      case 'wait-cancel':
        await new Promise((r) => s.onCancel.push(r));
        break;
      case 'crash':
        process.stderr.write(`mock-agent: crashing on purpose with code ${arg} at ${Date.now()}\n`);
        process.exit(Number(arg));
        break;
      case 'withdraw':
      case 'withdraw-when-told': {
        // Ask, then take the question back with $/cancel_request: after
        // 50 ms, or (when-told) once the client sends `_mock/withdraw`.
        const asking = ask(arg, { sessionId, question: 'Still there?' });
        const id = [...waiting.keys()].at(-1);
        const withdraw = () =>
          send({ jsonrpc: '2.0', method: '$/cancel_request', params: { requestId: JSON.parse(id) } });
        if (name === 'withdraw') setTimeout(withdraw, 50);
        else onWithdraw = withdraw;
        const reply = await asking;
        send(update(sessionId, textChunk('agent_message_chunk', `withdraw=${JSON.stringify(reply)}`)));
        break;
      }
      case 'bigline':
        // One valid message far over any sane line cap.
        process.stdout.write(
          JSON.stringify(update(sessionId, textChunk('agent_message_chunk', 'y'.repeat(Number(arg))))) + '\n',
        );
        break;
      case 'flood': {
        // COUNT:SIZE updates as fast as the pipe takes them.
        const [count, size] = arg.split(':').map(Number);
        const line = JSON.stringify(update(sessionId, textChunk('agent_message_chunk', 'z'.repeat(size)))) + '\n';
        for (let i = 0; i < count; i++) {
          if (!process.stdout.write(line)) await new Promise((r) => process.stdout.once('drain', r));
        }
        break;
      }
      case 'flood-unknown': {
        // COUNT:SIZE updates of a variant no client knows, each carrying
        // SIZE bytes (kept whole by a view: only its byte cap bounds them).
        const [count, size] = arg.split(':').map(Number);
        const data = 'u'.repeat(size);
        for (let i = 0; i < count; i++) {
          const line = JSON.stringify(update(sessionId, { sessionUpdate: 'x_blob', seq: i, data })) + '\n';
          if (!process.stdout.write(line)) await new Promise((r) => process.stdout.once('drain', r));
        }
        break;
      }
      case 'hang':
        return; // never answers this prompt
      case 'session':
      case 'read':
      case 'write':
      case 'term':
      case 'terms':
      case 'term-output':
      case 'term-wait':
      case 'term-kill':
      case 'term-release':
      case 'term-until':
      case 'use-term':
      case 'term-release-while-waiting':
        await client[name](...rest);
        break;
      default:
        send(update(sessionId, textChunk('agent_message_chunk', `unknown command ${name}`)));
    }
  }
  respond(id, { stopReason: s.cancelled ? 'cancelled' : 'end_turn' });
}

/**
 * The fs/* and terminal/* requests a script can make (see README). Path,
 * content and JSON arguments are URI-encoded so they survive the
 * whitespace/colon split of the script.
 */
function clientCalls(s, initialSession) {
  let sessionId = initialSession;
  const say = (kind, reply) =>
    send(update(initialSession, textChunk('agent_message_chunk', `${kind}=${JSON.stringify(reply)}`)));
  // The session's current terminal (the last created) outlives the turn.
  const onTerminal = (method) => ask(method, { sessionId, terminalId: s.terminalId });
  const create = async (json) => {
    const reply = await ask('terminal/create', { sessionId, ...JSON.parse(decodeURIComponent(json)) });
    if (reply.result?.terminalId) s.terminalId = reply.result.terminalId;
    return reply;
  };
  return {
    // Later requests name this session (e.g. one the client never created).
    session: (id) => (sessionId = decodeURIComponent(id)),
    read: async (path, line, limit) => {
      const params = { sessionId, path: decodeURIComponent(path) };
      if (line !== undefined && line !== '') params.line = Number(line);
      if (limit !== undefined && limit !== '') params.limit = Number(limit);
      say('read', await ask('fs/read_text_file', params));
    },
    write: async (path, content = '') =>
      say(
        'write',
        await ask('fs/write_text_file', {
          sessionId,
          path: decodeURIComponent(path),
          content: decodeURIComponent(content),
        }),
      ),
    term: async (json) => say('term', await create(json)),
    terms: async (count, json) =>
      say('terms', await Promise.all(Array.from({ length: Number(count) }, () => create(json)))),
    // Later terminal calls name this id (e.g. another session's terminal).
    'use-term': (id) => (s.terminalId = decodeURIComponent(id)),
    'term-output': async () => say('output', await onTerminal('terminal/output')),
    'term-wait': async () => say('wait', await onTerminal('terminal/wait_for_exit')),
    'term-kill': async () => say('kill', await onTerminal('terminal/kill')),
    'term-release': async () => say('release', await onTerminal('terminal/release')),
    // Poll terminal/output until it holds TEXT (or the command ended).
    'term-until': async (text) => {
      const want = decodeURIComponent(text);
      for (;;) {
        const reply = await onTerminal('terminal/output');
        if (!reply.result || reply.result.output.includes(want) || reply.result.exitStatus) return say('until', reply);
        await new Promise((r) => setTimeout(r, 20));
      }
    },
    // wait_for_exit still pending when the terminal is released.
    'term-release-while-waiting': async () => {
      const waited = onTerminal('terminal/wait_for_exit');
      say('release', await onTerminal('terminal/release'));
      say('waited', await waited);
    },
  };
}

function onRequest(msg) {
  const { id, method, params = {} } = msg;
  switch (method) {
    case 'initialize':
      if (flag('--hang-init')) return; // never answers
      if (stderrBeforeInit > 0) {
        // Far more than a pipe holds: a client that does not drain stderr deadlocks here.
        const chunk = 'x'.repeat(1023) + '\n';
        for (let i = 0; i < stderrBeforeInit / 1024; i++) process.stderr.write(chunk);
      }
      return respond(id, {
        protocolVersion,
        agentCapabilities: {
          loadSession: !flag('--no-load'),
          promptCapabilities: { image: false, audio: false, embeddedContext: true },
          ...(flag('--resume') ? { sessionCapabilities: { resume: {}, list: {}, fork: {}, delete: {} } } : {}),
        },
        agentInfo: { name: 'mock-agent', version: '1.0.0' },
        authMethods: flag('--require-auth')
          ? [{ id: 'mock-login', name: 'Mock login', description: 'authenticate, then open sessions' }]
          : [],
        _meta: {
          pid: process.pid,
          argv,
          grandchild: grandchild?.pid,
          receivedClientCapabilities: params.clientCapabilities,
          receivedClientInfo: params.clientInfo,
          receivedProtocolVersion: params.protocolVersion,
        },
      });
    case 'session/new': {
      if (flag('--require-auth') && !authenticated) return fail(id, -32000, 'Authentication required');
      // Unique across processes when sessions outlive them.
      const sessionId = sessionsDir ? `sess_${process.pid}_${++sessionCounter}` : `sess_${++sessionCounter}`;
      session(sessionId);
      if (sessionsDir) appendFileSync(historyFile(sessionId), '');
      // Like `agentao --resume`: history replays before the id is known.
      if (flag('--replay-on-new')) send(update(sessionId, textChunk('agent_message_chunk', 'replayed before new')));
      return respond(id, {
        sessionId,
        modes: {
          currentModeId: 'default',
          availableModes: [
            { id: 'default', name: 'Default' },
            { id: 'plan', name: 'Plan' },
          ],
        },
      });
    }
    case 'session/load':
      if (sessionsDir) {
        if (!existsSync(historyFile(params.sessionId)))
          return fail(id, -32002, `Session not found: ${params.sessionId}`);
        const lines = readFileSync(historyFile(params.sessionId), 'utf8').split('\n').filter(Boolean);
        for (const line of lines)
          process.stdout.write(JSON.stringify(update(params.sessionId, JSON.parse(line))) + '\n');
        session(params.sessionId);
        return respond(id, null);
      }
      // History replays as updates before the response.
      send(update(params.sessionId, textChunk('user_message_chunk', 'earlier question')));
      send(update(params.sessionId, textChunk('agent_message_chunk', 'earlier answer')));
      session(params.sessionId);
      return respond(id, null);
    case 'session/resume':
      if (sessionsDir) {
        if (!existsSync(historyFile(params.sessionId)))
          return fail(id, -32002, `Session not found: ${params.sessionId}`);
        session(params.sessionId);
        return respond(id, {});
      }
      return respond(id, { _meta: { method, params } });
    case 'session/fork': {
      if (!sessionsDir || !existsSync(historyFile(params.sessionId)))
        return fail(id, -32002, `Session not found: ${params.sessionId}`);
      const sessionId = `sess_${process.pid}_${++sessionCounter}`;
      session(sessionId);
      appendFileSync(historyFile(sessionId), readFileSync(historyFile(params.sessionId)));
      return respond(id, { sessionId });
    }
    case 'session/list':
      if (sessionsDir) {
        const ids = readdirSync(sessionsDir)
          .filter((f) => f.endsWith('.ndjson'))
          .map((f) => decodeURIComponent(f.slice(0, -'.ndjson'.length)));
        return respond(id, { sessions: ids.map((sessionId) => ({ sessionId, cwd: process.cwd() })) });
      }
      return respond(id, { sessions: [...sessions.keys()].map((sessionId) => ({ sessionId, cwd: process.cwd() })) });
    case 'session/set_mode':
      if (params.modeId === 'no-such-mode') return fail(id, -32602, `unknown mode ${params.modeId}`);
      return respond(id, { _meta: { method, params } });
    case 'session/set_config_option':
      // Like real agents: the whole new option list.
      return respond(id, {
        configOptions: [
          {
            id: params.configId,
            name: params.configId,
            type: 'select',
            currentValue: params.value,
            options: [{ value: params.value, name: params.value }],
          },
        ],
        _meta: { method, params },
      });
    case 'session/delete':
      if (sessionsDir && existsSync(historyFile(params.sessionId))) rmSync(historyFile(params.sessionId));
      return respond(id, { _meta: { method, params } });
    case 'authenticate':
      authenticated = true;
      return respond(id, { _meta: { method, params } });
    case 'session/close':
    case 'logout':
      return respond(id, { _meta: { method, params } });
    case 'session/prompt':
      for (const block of params.prompt ?? [])
        remember(params.sessionId, { sessionUpdate: 'user_message_chunk', content: block });
      runScript(id, params);
      return;
    case '_mock/echo':
      return respond(id, params);
    case '_mock/received':
      return respond(id, { received });
    case '_mock/fail':
      return fail(id, params.code ?? -32000, params.message ?? 'failed on purpose', params.data);
    case '_mock/never':
      return; // never answered
    default:
      return fail(id, -32601, `Method not found: ${method}`);
  }
}

let onWithdraw = () => {}; // `withdraw-when-told`

function onNotification(msg) {
  received.push(msg);
  if (msg.method === '_mock/withdraw') onWithdraw();
  if (msg.method === 'session/cancel') {
    const s = session(msg.params?.sessionId);
    s.cancelled = true;
    for (const wake of s.onCancel.splice(0)) wake();
  }
}

const rl = createInterface({ input: process.stdin, crlfDelay: Infinity });
rl.on('line', (line) => {
  if (wireLog) logWire('in', line);
  if (!line.trim()) return;
  let msg;
  try {
    msg = JSON.parse(line);
  } catch {
    return fail(null, -32700, 'Parse error');
  }
  if (msg.method === undefined) {
    const resolve = waiting.get(JSON.stringify(msg.id));
    waiting.delete(JSON.stringify(msg.id));
    resolve?.(msg);
  } else if (msg.id === undefined) {
    onNotification(msg);
  } else {
    onRequest(msg);
  }
});
rl.on('close', () => {
  // Stay alive like an agent that ignores EOF (nothing else holds the loop).
  if (flag('--ignore-eof')) return setInterval(() => {}, 1 << 30);
  process.stdout.write('', () => process.exit(0));
});
