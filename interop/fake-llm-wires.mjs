// The four streamed model APIs the fake model speaks, each as a pair:
// `read(body)` turns a request into the wire-neutral conversation the
// script is matched against, `stream(res, step, ids)` writes a scripted
// step as that API's SSE stream (text, reasoning, tool calls, or a
// `trickle` that streams until the client hangs up).
//
//   chat       OpenAI Chat Completions   POST /v1/chat/completions
//   responses  OpenAI Responses           POST /v1/responses
//   anthropic  Anthropic Messages         POST /v1/messages
//   gemini     Gemini                     POST /v1beta/models/<m>:streamGenerateContent?alt=sse
//                                        (and :generateContent, unstreamed)

/** Split text into a few pieces so the agent sees a real stream. */
export function pieces(text) {
  const words = text.match(/\S+\s*/g) ?? [text];
  const out = [];
  for (let i = 0; i < words.length; i += 3) out.push(words.slice(i, i + 3).join(''));
  return out;
}

// Agents wrap the user's words in context blocks (reminders, environment,
// instructions) and may send user messages holding only those: match only
// the user's own words.
const WRAPPERS =
  /<(system-reminder|environment_context|user_instructions|permissions instructions|session_context|local-command-caveat|command-name|command-message|command-args|local-command-stdout)>[\s\S]*?<\/\1>\s*/g;
export function userWords(text) {
  return String(text ?? '')
    .replace(WRAPPERS, '')
    .trim();
}

function textOf(content) {
  if (typeof content === 'string') return content;
  if (Array.isArray(content))
    return content.map((p) => (typeof p === 'string' ? p : typeof p?.text === 'string' ? p.text : '')).join('');
  return '';
}

/**
 * A conversation as a list of turns `{ role: 'user'|'model'|'tool', text }`:
 * `user` carries the user's words (possibly empty), `model` one model
 * answer, `tool` one tool result.
 */
function context(turns, body, hasTools) {
  let lastUser = -1;
  for (let i = turns.length - 1; i >= 0; i--) {
    if (turns[i].role === 'user' && userWords(turns[i].text) !== '') {
      lastUser = i;
      break;
    }
  }
  const since = lastUser < 0 ? [] : turns.slice(lastUser + 1);
  const toolResults = since.filter((t) => t.role === 'tool').map((t) => t.text);
  return {
    body,
    turnText: lastUser < 0 ? '' : userWords(turns[lastUser].text),
    step: since.filter((t) => t.role === 'model').length,
    toolResults,
    lastToolResult: toolResults.at(-1) ?? '',
    hasTools,
  };
}

const sse = (res, data, event) => res.write(`${event ? `event: ${event}\n` : ''}data: ${JSON.stringify(data)}\n\n`);

function sseHead(res) {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
}

/** Calls `write()` every `ms` until the response is gone or `stopped()`. */
function trickle(res, ms, stopped, write, timers) {
  const timer = setInterval(() => {
    if (res.destroyed || stopped()) {
      clearInterval(timer);
      timers.delete(timer);
      return;
    }
    write();
  }, ms);
  timers.add(timer);
}

// ---------------------------------------------------------------- chat
const chat = {
  read(body) {
    const turns = [];
    for (const m of Array.isArray(body?.messages) ? body.messages : []) {
      if (m?.role === 'user') turns.push({ role: 'user', text: textOf(m.content) });
      else if (m?.role === 'assistant') turns.push({ role: 'model', text: textOf(m.content) });
      else if (m?.role === 'tool') turns.push({ role: 'tool', text: textOf(m.content) });
    }
    return context(turns, body, Array.isArray(body?.tools) && body.tools.length > 0);
  },
  stream(res, step, io) {
    const id = `chatcmpl-fake-${io.seq()}`;
    const created = Math.floor(Date.now() / 1000);
    const chunk = (delta, finishReason = null) =>
      `data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created, model: io.model, choices: [{ index: 0, delta, finish_reason: finishReason }] })}\n\n`;
    sseHead(res);
    res.write(chunk({ role: 'assistant', content: '' }));
    for (const p of step.reasoning ? pieces(step.reasoning) : []) res.write(chunk({ reasoning_content: p }));
    for (const p of step.text ? pieces(step.text) : []) res.write(chunk({ content: p }));
    if (step.trickle)
      return trickle(res, io.trickleMs, io.stopped, () => res.write(chunk({ content: step.trickle })), io.timers);
    const calls = step.toolCalls ?? [];
    calls.forEach((call, index) => {
      const args = JSON.stringify(call.arguments ?? {});
      const half = Math.ceil(args.length / 2);
      res.write(
        chunk({
          tool_calls: [{ index, id: io.callId(), type: 'function', function: { name: call.name, arguments: '' } }],
        }),
      );
      res.write(chunk({ tool_calls: [{ index, function: { arguments: args.slice(0, half) } }] }));
      res.write(chunk({ tool_calls: [{ index, function: { arguments: args.slice(half) } }] }));
    });
    res.write(chunk({}, calls.length ? 'tool_calls' : 'stop'));
    res.write(
      `data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created, model: io.model, choices: [], usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 } })}\n\n`,
    );
    res.end('data: [DONE]\n\n');
  },
};

// ----------------------------------------------------------- responses
const MODEL_ITEMS = new Set(['reasoning', 'function_call', 'custom_tool_call', 'local_shell_call']);
const OUTPUT_ITEMS = new Set(['function_call_output', 'custom_tool_call_output', 'local_shell_call_output']);
const responses = {
  read(body) {
    const turns = [];
    let inModel = false; // consecutive model items are one model answer
    for (const item of Array.isArray(body?.input) ? body.input : []) {
      const type = item?.type ?? 'message';
      if (type === 'message' && item.role === 'user') {
        turns.push({ role: 'user', text: textOf(item.content) });
        inModel = false;
      } else if (MODEL_ITEMS.has(type) || (type === 'message' && item.role === 'assistant')) {
        if (!inModel) turns.push({ role: 'model', text: '' });
        inModel = true;
      } else if (OUTPUT_ITEMS.has(type)) {
        turns.push({ role: 'tool', text: typeof item.output === 'string' ? item.output : JSON.stringify(item.output) });
        inModel = false;
      }
    }
    return context(turns, body, Array.isArray(body?.tools) && body.tools.length > 0);
  },
  stream(res, step, io) {
    const id = `resp_fake_${io.seq()}`;
    const ev = (type, fields) => sse(res, { type, ...fields }, type);
    sseHead(res);
    ev('response.created', {
      response: { id, object: 'response', status: 'in_progress', model: io.model, output: [] },
    });
    let index = 0;
    if (step.reasoning) {
      const rid = `rs_${id}`;
      ev('response.output_item.added', { output_index: index, item: { type: 'reasoning', id: rid, summary: [] } });
      for (const p of pieces(step.reasoning))
        ev('response.reasoning_summary_text.delta', { item_id: rid, output_index: index, summary_index: 0, delta: p });
      ev('response.output_item.done', {
        output_index: index,
        item: { type: 'reasoning', id: rid, summary: [{ type: 'summary_text', text: step.reasoning }] },
      });
      index++;
    }
    if (step.text || step.trickle) {
      const mid = `msg_${id}`;
      const oi = index++;
      ev('response.output_item.added', {
        output_index: oi,
        item: { type: 'message', id: mid, role: 'assistant', status: 'in_progress', content: [] },
      });
      let said = '';
      const delta = (d) => {
        said += d;
        ev('response.output_text.delta', { item_id: mid, output_index: oi, content_index: 0, delta: d });
      };
      for (const p of step.text ? pieces(step.text) : []) delta(p);
      if (step.trickle) return trickle(res, io.trickleMs, io.stopped, () => delta(step.trickle), io.timers);
      ev('response.output_item.done', {
        output_index: oi,
        item: {
          type: 'message',
          id: mid,
          role: 'assistant',
          status: 'completed',
          content: [{ type: 'output_text', text: said, annotations: [] }],
        },
      });
    }
    for (const call of step.toolCalls ?? []) {
      const item = {
        type: 'function_call',
        id: `fc_${io.seq()}`,
        call_id: io.callId(),
        name: call.name,
        arguments: JSON.stringify(call.arguments ?? {}),
        status: 'completed',
      };
      ev('response.output_item.added', { output_index: index, item: { ...item, arguments: '' } });
      ev('response.function_call_arguments.delta', { item_id: item.id, output_index: index, delta: item.arguments });
      ev('response.output_item.done', { output_index: index++, item });
    }
    const usage = {
      input_tokens: 10,
      input_tokens_details: { cached_tokens: 0 },
      output_tokens: 5,
      output_tokens_details: { reasoning_tokens: 0 },
      total_tokens: 15,
    };
    ev('response.completed', {
      response: { id, object: 'response', status: 'completed', model: io.model, output: [], usage },
    });
    res.end();
  },
};

// ----------------------------------------------------------- anthropic
const anthropic = {
  read(body) {
    const turns = [];
    for (const m of Array.isArray(body?.messages) ? body.messages : []) {
      if (m?.role === 'assistant') {
        turns.push({ role: 'model', text: textOf(m.content) });
        continue;
      }
      if (m?.role !== 'user') continue;
      const blocks =
        typeof m.content === 'string' ? [{ type: 'text', text: m.content }] : Array.isArray(m.content) ? m.content : [];
      for (const b of blocks) if (b?.type === 'tool_result') turns.push({ role: 'tool', text: textOf(b.content) });
      // Several text blocks (context, an interrupted prompt, the new one): the user's words are the last.
      const words = blocks
        .filter((b) => b?.type === 'text')
        .map((b) => userWords(b.text))
        .filter((w) => w !== '')
        .at(-1);
      if (words) turns.push({ role: 'user', text: words });
    }
    return context(turns, body, Array.isArray(body?.tools) && body.tools.length > 0);
  },
  stream(res, step, io) {
    const id = `msg_fake_${io.seq()}`;
    const calls = step.toolCalls ?? [];
    const stopReason = calls.length ? 'tool_use' : 'end_turn';
    const usage = { input_tokens: 10, output_tokens: 5, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 };
    if (io.body?.stream !== true) {
      // Unstreamed: one JSON message (side calls such as titles use it).
      const content = [];
      if (step.text) content.push({ type: 'text', text: step.text });
      for (const c of calls)
        content.push({ type: 'tool_use', id: `toolu_${io.callId()}`, name: c.name, input: c.arguments ?? {} });
      res.writeHead(200, { 'content-type': 'application/json' });
      return res.end(
        JSON.stringify({
          id,
          type: 'message',
          role: 'assistant',
          model: io.model,
          content,
          stop_reason: stopReason,
          stop_sequence: null,
          usage,
        }),
      );
    }
    const ev = (type, fields) => sse(res, { type, ...fields }, type);
    sseHead(res);
    ev('message_start', {
      message: {
        id,
        type: 'message',
        role: 'assistant',
        model: io.model,
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage: { ...usage, output_tokens: 1 },
      },
    });
    let index = 0;
    if (step.reasoning) {
      ev('content_block_start', { index, content_block: { type: 'thinking', thinking: '', signature: '' } });
      for (const p of pieces(step.reasoning))
        ev('content_block_delta', { index, delta: { type: 'thinking_delta', thinking: p } });
      ev('content_block_delta', { index, delta: { type: 'signature_delta', signature: 'fake-signature' } });
      ev('content_block_stop', { index: index++ });
    }
    if (step.text || step.trickle) {
      const bi = index++;
      ev('content_block_start', { index: bi, content_block: { type: 'text', text: '' } });
      for (const p of step.text ? pieces(step.text) : [])
        ev('content_block_delta', { index: bi, delta: { type: 'text_delta', text: p } });
      if (step.trickle) {
        return trickle(
          res,
          io.trickleMs,
          io.stopped,
          () => ev('content_block_delta', { index: bi, delta: { type: 'text_delta', text: step.trickle } }),
          io.timers,
        );
      }
      ev('content_block_stop', { index: bi });
    }
    for (const call of calls) {
      const bi = index++;
      const args = JSON.stringify(call.arguments ?? {});
      const half = Math.ceil(args.length / 2);
      ev('content_block_start', {
        index: bi,
        content_block: { type: 'tool_use', id: `toolu_${io.callId()}`, name: call.name, input: {} },
      });
      ev('content_block_delta', { index: bi, delta: { type: 'input_json_delta', partial_json: args.slice(0, half) } });
      ev('content_block_delta', { index: bi, delta: { type: 'input_json_delta', partial_json: args.slice(half) } });
      ev('content_block_stop', { index: bi });
    }
    ev('message_delta', { delta: { stop_reason: stopReason, stop_sequence: null }, usage: { output_tokens: 5 } });
    ev('message_stop', {});
    res.end();
  },
};

// -------------------------------------------------------------- gemini
const gemini = {
  read(body) {
    const turns = [];
    for (const c of Array.isArray(body?.contents) ? body.contents : []) {
      const parts = Array.isArray(c?.parts) ? c.parts : [];
      if (c?.role === 'model') {
        turns.push({ role: 'model', text: parts.map((p) => p?.text ?? '').join('') });
        continue;
      }
      for (const p of parts)
        if (p?.functionResponse) turns.push({ role: 'tool', text: JSON.stringify(p.functionResponse.response ?? {}) });
      const words = parts
        .filter((p) => typeof p?.text === 'string')
        .map((p) => p.text)
        .join('\n');
      if (words.trim() !== '') turns.push({ role: 'user', text: words });
    }
    const hasTools = Array.isArray(body?.tools) && body.tools.some((t) => t?.functionDeclarations?.length);
    return context(turns, body, hasTools);
  },
  stream(res, step, io) {
    const usageMetadata = { promptTokenCount: 10, candidatesTokenCount: 5, totalTokenCount: 15 };
    const chunk = (parts, finishReason) => ({
      candidates: [{ content: { role: 'model', parts }, index: 0, ...(finishReason ? { finishReason } : {}) }],
      ...(finishReason ? { usageMetadata } : {}),
      modelVersion: io.model,
    });
    const calls = (step.toolCalls ?? []).map((c) => ({
      functionCall: { id: io.callId(), name: c.name, args: c.arguments ?? {} },
    }));
    if (!io.streamed) {
      const parts = [];
      if (step.reasoning) parts.push({ text: step.reasoning, thought: true });
      if (step.text) parts.push({ text: step.text });
      parts.push(...calls);
      res.writeHead(200, { 'content-type': 'application/json' });
      return res.end(JSON.stringify(chunk(parts.length ? parts : [{ text: '' }], 'STOP')));
    }
    sseHead(res);
    for (const p of step.reasoning ? pieces(step.reasoning) : []) sse(res, chunk([{ text: p, thought: true }]));
    const texts = step.text ? pieces(step.text) : [];
    if (step.trickle) {
      for (const p of texts) sse(res, chunk([{ text: p }]));
      return trickle(res, io.trickleMs, io.stopped, () => sse(res, chunk([{ text: step.trickle }])), io.timers);
    }
    // The finish reason rides on the last chunk, as the real API sends it.
    const parts = [...texts.map((t) => [{ text: t }]), ...(calls.length ? [calls] : [])];
    if (parts.length === 0) parts.push([{ text: '' }]);
    for (const [i, p] of parts.entries()) sse(res, chunk(p, i === parts.length - 1 ? 'STOP' : undefined));
    res.end();
  },
};

export const WIRES = { chat, responses, anthropic, gemini };

/** Which API a request is for, from its method and path; null if none. */
export function wireOf(method, url) {
  if (method !== 'POST') return null;
  const path = url.split('?')[0];
  if (path.endsWith('/chat/completions')) return { wire: 'chat', streamed: true };
  if (path.endsWith('/responses')) return { wire: 'responses', streamed: true };
  if (path.endsWith('/messages')) return { wire: 'anthropic', streamed: true };
  if (path.endsWith(':streamGenerateContent')) return { wire: 'gemini', streamed: true };
  if (path.endsWith(':generateContent')) return { wire: 'gemini', streamed: false };
  return null;
}
