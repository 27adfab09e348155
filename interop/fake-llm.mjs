// A fake OpenAI-compatible Chat Completions server, so real agents run
// offline and deterministically. It listens on 127.0.0.1 (random port),
// streams SSE chunks (text, reasoning and tool-call deltas) chosen by a
// keyword script, records every request it received, and closes itself
// after `lifetimeMs` even if a test forgets to.
//
// Script: the user's words in the conversation's last user message (minus
// the agent's <system-reminder> blocks) are matched against each rule's
// `match` (substring or RegExp); the first rule that matches answers.
// `steps[i]` answers the i-th model call of that turn (i = assistant
// messages since that user message), so a tool call in
// step 0 is followed by step 1 once the agent sends the tool's result.
// A step is an object or `(ctx) => object`:
//   { text, reasoning, toolCalls: [{ name, arguments }], trickle, status, error }
// `trickle: 'word '` streams that text forever (until the agent hangs up):
// a turn that only ends when cancelled.
import http from 'node:http';

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
  { match: /\bunauthorized\b/, steps: [{ status: 401, error: { message: 'Incorrect API key provided', type: 'invalid_request_error', code: 'invalid_api_key' } }] },
  // Anything else: a short streamed greeting that quotes the prompt.
  { match: '', steps: [(ctx) => ({ text: `Hello! You said: ${ctx.turnText}` })] },
];

function after(text, marker) {
  return text.slice(text.indexOf(marker) + marker.length).split('\n')[0].trim();
}

function contentText(content) {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) return content.map((p) => (typeof p === 'string' ? p : p?.text ?? '')).join('');
  return '';
}

// Agents wrap the user's words in reminders (date, task list) and may add
// user messages that hold only a reminder; match only the user's words.
function userWords(message) {
  return contentText(message.content).replace(/<system-reminder>[\s\S]*?<\/system-reminder>\s*/g, '').trim();
}

/** Where in the conversation a request is: the last user turn and the model calls since. */
function turnContext(body) {
  const messages = Array.isArray(body?.messages) ? body.messages : [];
  let lastUser = -1;
  for (let i = messages.length - 1; i >= 0; i--) {
    if (messages[i]?.role === 'user' && userWords(messages[i]) !== '') {
      lastUser = i;
      break;
    }
  }
  const since = lastUser < 0 ? [] : messages.slice(lastUser + 1);
  const toolResults = since.filter((m) => m.role === 'tool').map((m) => contentText(m.content));
  return {
    body,
    messages,
    turnText: lastUser < 0 ? '' : userWords(messages[lastUser]),
    step: since.filter((m) => m.role === 'assistant').length,
    toolResults,
    lastToolResult: toolResults.at(-1) ?? '',
  };
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

/** Split text into a few pieces so the agent sees a real stream. */
function pieces(text) {
  const words = text.match(/\S+\s*/g) ?? [text];
  const out = [];
  for (let i = 0; i < words.length; i += 3) out.push(words.slice(i, i + 3).join(''));
  return out;
}

/**
 * Start the server. Resolves to
 * `{ baseUrl, port, requests, received(pred), close() }`.
 * `requests` holds `{ method, path, headers, body, aborted }` in arrival order.
 */
export async function startFakeLlm({ script = DEFAULT_SCRIPT, lifetimeMs = 180_000, model = 'fake-model', trickleMs = 40 } = {}) {
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
      if (req.method === 'GET' && req.url.endsWith('/models')) {
        record(entry);
        return json(res, 200, { object: 'list', data: [{ id: model, object: 'model', owned_by: 'fake' }] });
      }
      if (req.method !== 'POST' || !req.url.endsWith('/chat/completions')) {
        record(entry);
        return json(res, 404, { error: { message: `no route ${req.method} ${req.url}` } });
      }
      const ctx = turnContext(body);
      let step;
      try {
        step = pickStep(script, ctx);
      } catch (err) {
        step = { status: 500, error: { message: `fake-llm script failed: ${err.message}` } };
      }
      entry.step = step;
      res.on('close', () => {
        if (!res.writableFinished) entry.aborted = true;
      });
      record(entry);
      if (step.status) return json(res, step.status, { error: step.error ?? { message: `status ${step.status}` } });
      stream(res, body?.model ?? model, step);
    });
  });

  function json(res, status, value) {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(value));
  }

  function stream(res, modelName, step) {
    const id = `chatcmpl-fake-${nextCompletion++}`;
    const created = Math.floor(Date.now() / 1000);
    const chunk = (delta, finishReason = null, extra = {}) =>
      `data: ${JSON.stringify({
        id,
        object: 'chat.completion.chunk',
        created,
        model: modelName,
        choices: [{ index: 0, delta, finish_reason: finishReason }],
        ...extra,
      })}\n\n`;
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
    res.write(chunk({ role: 'assistant', content: '' }));
    for (const p of step.reasoning ? pieces(step.reasoning) : []) res.write(chunk({ reasoning_content: p }));
    for (const p of step.text ? pieces(step.text) : []) res.write(chunk({ content: p }));
    if (step.trickle) {
      // Keeps streaming until the agent hangs up or the server closes.
      const timer = setInterval(() => {
        if (res.destroyed || closed) {
          clearInterval(timer);
          timers.delete(timer);
          return;
        }
        res.write(chunk({ content: step.trickle }));
      }, trickleMs);
      timers.add(timer);
      return;
    }
    const calls = step.toolCalls ?? [];
    calls.forEach((call, index) => {
      const args = JSON.stringify(call.arguments ?? {});
      const half = Math.ceil(args.length / 2);
      const callId = `call_fake_${nextCall++}`;
      res.write(chunk({ tool_calls: [{ index, id: callId, type: 'function', function: { name: call.name, arguments: '' } }] }));
      res.write(chunk({ tool_calls: [{ index, function: { arguments: args.slice(0, half) } }] }));
      res.write(chunk({ tool_calls: [{ index, function: { arguments: args.slice(half) } }] }));
    });
    res.write(chunk({}, calls.length ? 'tool_calls' : 'stop'));
    res.write(
      `data: ${JSON.stringify({
        id,
        object: 'chat.completion.chunk',
        created,
        model: modelName,
        choices: [],
        usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 },
      })}\n\n`,
    );
    res.end('data: [DONE]\n\n');
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
      return requests.filter((r) => r.path.endsWith('/chat/completions'));
    },
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
