// Realistic agent turns for `bench:ui`, shaped like what claude-agent-acp,
// codex-acp, gemini-cli and qwen-code send (see /work/shared/acp/schema.json):
// message chunks with a messageId and tool calls, thoughts, plan and usage
// updates BETWEEN the chunks of one message; tool calls with rawInput and
// locations, updates carrying terminal output ({type:'content'}), an
// embedded terminal ({type:'terminal'}) and diffs ({type:'diff'}); base64
// images. Deterministic: the same scenario gives the same updates, so
// every client must end in the same state.
//
// `turns(name)` yields, per prompt of the scenario, a generator of the
// `session/update` `update` objects the agent sends for that prompt.

/** A small deterministic generator (LCG), so texts differ but repeat. */
function rng(seed) {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

const WORDS =
  'the a fix test cargo build error module function returns value because we need to check which file line struct impl async await result option into iter map ok none some self pub fn let mut'.split(
    ' ',
  );

/** Prose of about `bytes` bytes: a model's tokens (16–80 B per chunk). */
function prose(r, bytes) {
  let s = '';
  while (s.length < bytes) s += WORDS[Math.floor(r() * WORDS.length)] + (r() < 0.1 ? '.\n' : ' ');
  return s.slice(0, bytes);
}

/** Source-like lines: a file's text for a diff. */
function source(r, bytes) {
  let s = '';
  let n = 0;
  while (s.length < bytes)
    s += `    let v${n++} = ${prose(r, 20 + Math.floor(r() * 40)).trim()}; // ${Math.floor(r() * 1e6)}\n`;
  return s.slice(0, bytes);
}

/** Terminal output: cargo/npm-like lines, with ANSI colours. */
function terminal(r, bytes) {
  let s = '';
  while (s.length < bytes) {
    s +=
      r() < 0.2
        ? `\u001b[32m   Compiling\u001b[0m crate-${Math.floor(r() * 500)} v0.${Math.floor(r() * 30)}.0\n`
        : `test tests::case_${Math.floor(r() * 1e5)} ... ok\n`;
  }
  return s.slice(0, bytes);
}

/** Base64 of `bytes` pseudo-random bytes (an image's payload). */
function base64(r, bytes) {
  const buf = Buffer.allocUnsafe(bytes);
  for (let i = 0; i < bytes; i++) buf[i] = Math.floor(r() * 256);
  return buf.toString('base64');
}

const KINDS = ['read', 'edit', 'execute', 'search'];

/**
 * One tool call as agents send it: the call (pending, rawInput,
 * locations), `progress` updates with terminal output, a final update
 * (completed: a diff for an edit, the output for the rest).
 */
function* toolCall(r, id, { progress, outputBytes, diffBytes, terminalEmbed }) {
  const kind = KINDS[Math.floor(r() * KINDS.length)];
  const path = `/work/project/src/module_${Math.floor(r() * 100)}.rs`;
  const rawInput =
    kind === 'execute'
      ? { command: 'cargo test --workspace', description: 'Run the tests', timeout: 120000 }
      : kind === 'search'
        ? { pattern: 'fn main', path: '/work/project' }
        : { file_path: path, limit: 2000 };
  yield {
    sessionUpdate: 'tool_call',
    toolCallId: id,
    title: kind === 'execute' ? '`cargo test --workspace`' : `${kind} ${path}`,
    kind,
    status: 'pending',
    locations: kind === 'execute' ? [] : [{ path }],
    rawInput,
    content: [],
  };
  yield { sessionUpdate: 'tool_call_update', toolCallId: id, status: 'in_progress' };
  if (terminalEmbed)
    yield {
      sessionUpdate: 'tool_call_update',
      toolCallId: id,
      content: [{ type: 'terminal', terminalId: `term_${id}` }],
    };
  for (let p = 0; p < progress; p++) {
    yield {
      sessionUpdate: 'tool_call_update',
      toolCallId: id,
      content: [{ type: 'content', content: { type: 'text', text: terminal(r, outputBytes) } }],
    };
  }
  if (kind === 'edit' && diffBytes > 0) {
    const oldText = source(r, diffBytes);
    const newText = oldText.replace(/let v1/g, 'let mut v1') + source(r, diffBytes >> 4);
    yield {
      sessionUpdate: 'tool_call_update',
      toolCallId: id,
      status: 'completed',
      content: [{ type: 'diff', path, oldText, newText }],
      rawOutput: { success: true },
    };
  } else {
    yield {
      sessionUpdate: 'tool_call_update',
      toolCallId: id,
      status: 'completed',
      rawOutput: { output: terminal(r, Math.min(outputBytes, 2048)), exitCode: 0 },
    };
  }
}

function plan(r, step, steps) {
  return {
    sessionUpdate: 'plan',
    entries: Array.from({ length: steps }, (_, i) => ({
      content: `Step ${i + 1}: ${prose(r, 40).trim()}`,
      priority: i === 0 ? 'high' : 'medium',
      status: i < step ? 'completed' : i === step ? 'in_progress' : 'pending',
    })),
  };
}

/**
 * One turn: `messages` agent messages of `chunks` chunks each (16–80 B of
 * text), a thought before each, and between the chunks of each message
 * `tools` tool calls (see toolCall), a plan update per tool call, a usage
 * update per message, and `images` image blocks per message.
 */
function* turn(r, t, o) {
  let used = 10_000 + t * 3_000;
  for (let m = 0; m < o.messages; m++) {
    const messageId = `msg_${t}_${m}`;
    const thoughtId = `thought_${t}_${m}`;
    for (let c = 0; c < o.thoughts; c++)
      yield {
        sessionUpdate: 'agent_thought_chunk',
        messageId: thoughtId,
        content: { type: 'text', text: prose(r, 16 + Math.floor(r() * 64)) },
      };
    const toolEvery = o.tools > 0 ? Math.max(1, Math.floor(o.chunks / (o.tools + 1))) : Infinity;
    const imageEvery = o.images > 0 ? Math.max(1, Math.floor(o.chunks / (o.images + 1))) : Infinity;
    let tool = 0;
    let image = 0;
    for (let c = 0; c < o.chunks; c++) {
      yield {
        sessionUpdate: 'agent_message_chunk',
        messageId,
        content: { type: 'text', text: prose(r, 16 + Math.floor(r() * 64)) },
      };
      if ((c + 1) % toolEvery === 0 && tool < o.tools) {
        yield* toolCall(r, `toolu_${t}_${m}_${tool}`, o);
        yield plan(r, tool, o.tools);
        // The model thinks over the result before it writes on.
        yield {
          sessionUpdate: 'agent_thought_chunk',
          messageId: `${thoughtId}_${tool}`,
          content: { type: 'text', text: prose(r, 48) },
        };
        tool++;
      }
      if ((c + 1) % imageEvery === 0 && image < o.images) {
        image++;
        yield {
          sessionUpdate: 'agent_message_chunk',
          messageId,
          content: { type: 'image', mimeType: 'image/png', data: base64(r, o.imageBytes) },
        };
      }
    }
    used += o.chunks * 12;
    yield { sessionUpdate: 'usage_update', used, size: 200_000, cost: { amount: used / 1e6, currency: 'USD' } };
  }
}

// The scenarios: `prompts` turns of `turn(o)`. Sizes are picked so each
// client run does ~100k+ updates (CPU per update well above timer noise)
// and the view's defaults hold every scenario without dropping anything.
export const REAL = {
  interleaved: {
    title: 'one turn: 10 messages × 20k chunks, 2,000 tool events between the chunks, thoughts, plans, usage',
    prompts: 1,
    turn: {
      messages: 10,
      chunks: 20_000,
      thoughts: 200,
      tools: 40,
      progress: 2,
      outputBytes: 512,
      diffBytes: 2048,
      terminalEmbed: false,
      images: 0,
      imageBytes: 0,
    },
  },
  turns: {
    title: '100 turns: each 3 messages × 300 chunks, thoughts, 15 tool calls (terminal output, diffs), plans, usage',
    prompts: 100,
    turn: {
      messages: 3,
      chunks: 300,
      thoughts: 20,
      tools: 5,
      progress: 3,
      outputBytes: 2048,
      diffBytes: 4096,
      terminalEmbed: true,
      images: 0,
      imageBytes: 0,
    },
  },
  bigOutputs: {
    title: '20 turns, 10 tool calls each with 4 × 32 KB of terminal output and 16 KB diffs',
    prompts: 20,
    turn: {
      messages: 2,
      chunks: 1_000,
      thoughts: 20,
      tools: 5,
      progress: 4,
      outputBytes: 32 * 1024,
      diffBytes: 16 * 1024,
      terminalEmbed: true,
      images: 0,
      imageBytes: 0,
    },
  },
  images: {
    title: '10 turns, 4 base64 PNG blocks of 192 KB each between 2 × 2,000 chunks',
    prompts: 10,
    turn: {
      messages: 2,
      chunks: 2_000,
      thoughts: 20,
      tools: 2,
      progress: 1,
      outputBytes: 1024,
      diffBytes: 2048,
      terminalEmbed: false,
      images: 2,
      imageBytes: 144 * 1024,
    },
  },
};

/** The prompts of scenario `name`: per prompt, a fresh generator of its updates. */
export function turns(name) {
  const s = REAL[name];
  if (s === undefined) throw new Error(`unknown realistic scenario ${name} (${Object.keys(REAL).join(', ')})`);
  return Array.from({ length: s.prompts }, (_, t) => () => turn(rng(0x5eed + t), t, s.turn));
}

/** How many updates scenario `name` sends in all. */
export function countUpdates(name) {
  let n = 0;
  for (const make of turns(name)) for (const _ of make()) n++;
  return n;
}
