// A fake model server, so real agents run offline and deterministically:
// OpenAI Chat Completions and Responses, Anthropic Messages and Gemini, all
// streamed (fake-llm-wires.mjs). It listens on 127.0.0.1 (random port),
// streams SSE events (text, reasoning and tool calls) chosen by a keyword
// script, records every request it received, and closes itself after
// `lifetimeMs` even if a test forgets to.
//
// Script: the user's words in the conversation's last user message (minus
// the agents' wrapper blocks such as <system-reminder>) are matched against
// each rule's `match` (substring or RegExp); the first rule that matches
// answers. `steps[i]` answers the i-th model call of that turn (i = model
// answers since that user message), so a tool call in
// step 0 is followed by step 1 once the agent sends the tool's result.
// A step is an object or `(ctx) => object`:
//   { text, reasoning, toolCalls: [{ name, arguments }], trickle, status, error }
// `trickle: 'word '` streams that text forever (until the agent hangs up):
// a turn that only ends when cancelled.
import http from 'node:http';
import { WIRES, wireOf } from './fake-llm-wires.mjs';

/** The script the interop tests and the example host use. */
export const DEFAULT_SCRIPT = [
  { match: /\bslow\b/, steps: [{ text: 'Starting a long answer. ', trickle: 'more ' }] },
  {
    match: /\bthink\b/,
    steps: [{ reasoning: 'The user wants me to think. Considering options carefully.', text: 'Thought it through.' }],
  },
  {
    match: /\bplan\b/,
    steps: [
      {
        toolCalls: [
          {
            name: 'todo_write',
            arguments: {
              todos: [
                { content: 'Write the parser', status: 'in_progress' },
                { content: 'Test the parser', status: 'pending' },
              ],
            },
          },
        ],
      },
      { text: 'Plan recorded.' },
    ],
  },
  {
    // "shell: <command>" runs <command> through run_shell_command.
    match: /shell: /,
    steps: [
      (ctx) => ({ toolCalls: [{ name: 'run_shell_command', arguments: { command: after(ctx.turnText, 'shell: ') } }] }),
      (ctx) => ({ text: `Shell tool said: ${ctx.lastToolResult}` }),
    ],
  },
  {
    // "write: <path> <content>" writes a file through write_file.
    match: /write: /,
    steps: [
      (ctx) => {
        const [file, ...words] = after(ctx.turnText, 'write: ').split(' ');
        return { toolCalls: [{ name: 'write_file', arguments: { file_path: file, content: words.join(' ') } }] };
      },
      { text: 'File written.' },
    ],
  },
  {
    // "ask: <question>" asks the user through ask_user.
    match: /ask: /,
    steps: [
      (ctx) => ({ toolCalls: [{ name: 'ask_user', arguments: { question: after(ctx.turnText, 'ask: ') } }] }),
      (ctx) => ({ text: `The user answered: ${ctx.lastToolResult}` }),
    ],
  },
  {
    match: /\bunauthorized\b/,
    steps: [
      {
        status: 401,
        error: { message: 'Incorrect API key provided', type: 'invalid_request_error', code: 'invalid_api_key' },
      },
    ],
  },
  // Anything else: a short streamed greeting that quotes the prompt.
  { match: '', steps: [(ctx) => ({ text: `Hello! You said: ${ctx.turnText}` })] },
];

function after(text, marker) {
  return text
    .slice(text.indexOf(marker) + marker.length)
    .split('\n')[0]
    .trim();
}

function pickStep(script, ctx) {
  for (const rule of script) {
    const hit = rule.match instanceof RegExp ? rule.match.test(ctx.turnText) : ctx.turnText.includes(rule.match);
    if (!hit) continue;
    const step = rule.steps[ctx.step] ?? { text: 'Done.' };
    return typeof step === 'function' ? step(ctx) : step;
  }
  return { text: 'Done.' };
}

/** A value of a JSON schema's shape (the agents' side calls that ask for JSON). */
function fromSchema(schema, name = '') {
  if (!schema || typeof schema !== 'object') return null;
  if (Array.isArray(schema.enum))
    return name === 'next_speaker' && schema.enum.includes('user') ? 'user' : schema.enum[0];
  const type = String(schema.type ?? '').toLowerCase();
  if (type === 'object' || schema.properties) {
    const out = {};
    for (const [k, v] of Object.entries(schema.properties ?? {})) out[k] = fromSchema(v, k);
    return out;
  }
  if (type === 'array') return [];
  if (type === 'number' || type === 'integer') return schema.minimum ?? 0;
  if (type === 'boolean') return false;
  return 'fake';
}

/**
 * The step that answers a request: the script's, except for an agent's
 * side calls (titles, summaries, checks), which offer no tools: those get
 * text (or the JSON their schema asks for) instead of a scripted tool call.
 */
function answer(script, ctx) {
  const config = ctx.body?.generationConfig ?? {};
  const schema = config.responseJsonSchema ?? config.responseSchema;
  if (schema || config.responseMimeType === 'application/json')
    return { text: JSON.stringify(fromSchema(schema ?? { type: 'object' })) };
  const step = pickStep(script, ctx);
  if (step.toolCalls?.length && !ctx.hasTools) return { text: 'Done.' };
  return step;
}

/**
 * Start the server. Resolves to
 * `{ baseUrl, port, requests, received(pred), close() }`.
 * `requests` holds `{ method, path, headers, body, aborted }` in arrival order.
 */
export async function startFakeLlm({
  script = DEFAULT_SCRIPT,
  lifetimeMs = 180_000,
  model = 'fake-model',
  trickleMs = 40,
} = {}) {
  const requests = [];
  const waiters = [];
  const sockets = new Set();
  const timers = new Set();
  let nextCall = 0; // tool call ids
  let nextCompletion = 0;
  let closed = false;

  const record = (entry) => {
    requests.push(entry);
    for (const w of waiters.splice(0)) {
      if (w.pred(entry)) w.resolve(entry);
      else waiters.push(w);
    }
  };

  const server = http.createServer((req, res) => {
    let raw = '';
    req.setEncoding('utf8');
    req.on('data', (c) => (raw += c));
    req.on('end', () => {
      let body = null;
      try {
        body = raw ? JSON.parse(raw) : null;
      } catch {
        body = { unparsable: raw };
      }
      const entry = { method: req.method, path: req.url, headers: req.headers, body, aborted: false };
      const path = req.url.split('?')[0];
      if (req.method === 'GET' && path.endsWith('/models')) {
        record(entry);
        return json(res, 200, { object: 'list', data: [{ id: model, object: 'model', owned_by: 'fake' }] });
      }
      if (req.method === 'POST' && path.endsWith('/count_tokens')) {
        record(entry);
        return json(res, 200, { input_tokens: 10 });
      }
      if (req.method === 'POST' && path.endsWith(':countTokens')) {
        record(entry);
        return json(res, 200, { totalTokens: 10 });
      }
      const route = wireOf(req.method, req.url);
      if (!route) {
        record(entry);
        return json(res, 404, { error: { message: `no route ${req.method} ${req.url}` } });
      }
      const wire = WIRES[route.wire];
      const ctx = wire.read(body);
      let step;
      try {
        step = answer(script, ctx);
      } catch (err) {
        step = { status: 500, error: { message: `fake-llm script failed: ${err.message}` } };
      }
      Object.assign(entry, { wire: route.wire, turnText: ctx.turnText, stepIndex: ctx.step, step });
      res.on('close', () => {
        if (!res.writableFinished) entry.aborted = true;
      });
      record(entry);
      if (step.status) return json(res, step.status, { error: step.error ?? { message: `status ${step.status}` } });
      wire.stream(res, step, {
        model: body?.model ?? model,
        body,
        streamed: route.streamed,
        trickleMs,
        timers,
        stopped: () => closed,
        seq: () => nextCompletion++,
        callId: () => `call_fake_${nextCall++}`,
      });
    });
  });

  function json(res, status, value) {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(value));
  }

  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  const { port } = server.address();

  const close = () =>
    new Promise((resolve) => {
      if (closed) return resolve();
      closed = true;
      clearTimeout(lifetime);
      for (const t of timers) clearInterval(t);
      for (const s of sockets) s.destroy();
      for (const w of waiters.splice(0)) w.reject(new Error('fake LLM closed'));
      server.close(() => resolve());
    });
  // Bounded lifetime: a forgotten server never outlives its test run.
  const lifetime = setTimeout(close, lifetimeMs);
  lifetime.unref();

  return {
    port,
    baseUrl: `http://127.0.0.1:${port}/v1`,
    model,
    requests,
    /** Chat requests only (not /models). */
    get chats() {
      return requests.filter((r) => r.wire === 'chat');
    },
    /** Model calls of any API, in arrival order. */
    get calls() {
      return requests.filter((r) => r.wire);
    },
    /** The model's origin, for agents that add the API's path themselves (Anthropic, Gemini). */
    origin: `http://127.0.0.1:${port}`,
    /** Resolves with the first recorded request (past or future) that satisfies pred. */
    received(pred = () => true) {
      const hit = requests.find(pred);
      if (hit) return Promise.resolve(hit);
      if (closed) return Promise.reject(new Error('fake LLM closed'));
      return new Promise((resolve, reject) => waiters.push({ pred, resolve, reject }));
    },
    close,
  };
}

// `node interop/fake-llm.mjs` runs it standalone (e.g. for the example host).
if (import.meta.url === `file://${process.argv[1]}`) {
  const llm = await startFakeLlm({ lifetimeMs: Number(process.env.FAKE_LLM_LIFETIME_MS ?? 600_000) });
  console.log(`OPENAI_BASE_URL=${llm.baseUrl} OPENAI_API_KEY=fake-key OPENAI_MODEL=${llm.model}`);
  const stop = () => llm.close().then(() => process.exit(0));
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
}
