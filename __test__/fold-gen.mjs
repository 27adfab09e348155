// Random session/update streams for the fold property tests: every stable
// variant, unknown variants and fields, malformed updates, tool-call and
// compaction lifecycles, agent requests and their answers, prompts and
// setup results. Deterministic from a seed.

export function rng(seed) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const int = (n) => Math.floor(next() * n);
  const pick = (xs) => xs[int(xs.length)];
  const chance = (p) => next() < p;
  return { next, int, pick, chance };
}

// Lone and split surrogates too: the folds keep them as U+FFFD.
const WORDS = [
  'hello',
  ' world',
  'é',
  '漢字',
  '🙂',
  '\n',
  '"q"',
  '\\',
  'a'.repeat(40),
  '',
  ' ',
  '\ud83d',
  '\ude42',
  'x\udc00',
];
const KEYS = ['_meta', 'extra', 'x', '__proto__', 'constructor', 'zz', 'title'];

/** Arrays nested `depth` deep around `inner`. */
export function nested(depth, inner = 0) {
  let v = inner;
  for (let i = 0; i < depth; i++) v = [v];
  return v;
}

export function genValue(r, depth = 0) {
  // Deeper than a view keeps (64), sometimes deeper than serde parses (128).
  if (depth === 0 && r.chance(0.03)) return nested(60 + r.int(100));
  switch (r.int(depth > 1 ? 4 : 6)) {
    case 0:
      return r.pick(WORDS);
    case 1:
      return r.int(1000) - 10;
    case 2:
      return r.pick([null, true, false]);
    case 3:
      return r.pick(WORDS) + r.pick(WORDS);
    case 4:
      return Array.from({ length: r.int(3) }, () => genValue(r, depth + 1));
    default:
      return genObject(r, depth + 1);
  }
}

function genObject(r, depth = 0) {
  const o = {};
  for (let i = r.int(3); i > 0; i--) setOwn(o, r.pick(KEYS), genValue(r, depth + 1));
  return o;
}

function setOwn(o, k, v) {
  Object.defineProperty(o, k, { value: v, enumerable: true, writable: true, configurable: true });
}

/** Add a few unknown fields (sometimes). */
function sprinkle(r, o) {
  if (r.chance(0.15)) setOwn(o, r.pick(KEYS), genValue(r));
  return o;
}

function genBlock(r) {
  if (r.chance(0.75)) return { type: 'text', text: r.pick(WORDS) + r.pick(WORDS) };
  return r.pick([
    { type: 'text', text: r.pick(WORDS), annotations: { priority: r.int(3) } },
    { type: 'image', data: 'aGk=', mimeType: 'image/png' },
    { type: 'resource_link', uri: 'file:///a.txt', name: 'a.txt' },
    { type: 'resource', resource: { uri: 'file:///b', text: r.pick(WORDS) } },
    'not a block',
    null,
  ]);
}

const TOOL_IDS = ['t1', 't2', 't3', '__proto__', 't4'];
const STATUSES = ['pending', 'in_progress', 'completed', 'failed', null];

/** Text of 100 to 3,000 bytes or so: words, escapes, now and then a lone surrogate. */
function longText(r) {
  const words = r.chance(0.2) ? WORDS : WELL_FORMED;
  let s = '';
  for (let n = 100 + r.int(3000); s.length < n; ) s += r.pick(words) + (r.chance(0.2) ? '\u001b[0m' : '');
  return s;
}
const WELL_FORMED = WORDS.filter((w) => !/[\ud800-\udfff]/.test(w.replace(/[\ud800-\udbff][\udc00-\udfff]/g, '')));

/** One `update` value. */
export function genUpdate(r) {
  const kind = r.int(20);
  switch (kind) {
    case 0:
    case 1:
    case 2:
    case 3: {
      const u = {
        sessionUpdate: r.pick([
          'agent_message_chunk',
          'agent_message_chunk',
          'user_message_chunk',
          'agent_thought_chunk',
        ]),
        content: genBlock(r),
      };
      if (r.chance(0.3)) u.messageId = r.pick(['m1', 'm2', 'm3', null]);
      return sprinkle(r, u);
    }
    case 4:
      return sprinkle(r, {
        sessionUpdate: 'tool_call',
        toolCallId: r.pick(TOOL_IDS),
        title: r.pick(WORDS),
        kind: r.pick(['read', 'edit', 'execute', 'other']),
        status: r.pick(STATUSES),
        ...(r.chance(0.5) ? { rawInput: genValue(r) } : {}),
        ...(r.chance(0.3) ? { locations: [{ path: '/a', line: r.int(9) }] } : {}),
      });
    case 5:
    case 6: {
      const u = { sessionUpdate: 'tool_call_update', toolCallId: r.pick(TOOL_IDS) };
      if (r.chance(0.6)) u.status = r.pick(STATUSES);
      if (r.chance(0.3)) u.content = r.chance(0.8) ? [{ type: 'content', content: genBlock(r) }] : null;
      if (r.chance(0.3)) u.rawOutput = genValue(r);
      // Terminal output and diffs: long fields, a view keeps their text.
      if (r.chance(0.2)) u.content = [{ type: 'content', content: { type: 'text', text: longText(r) } }];
      if (r.chance(0.1)) u.rawOutput = { output: longText(r), exitCode: r.int(2), at: [r.int(9), null] };
      if (r.chance(0.2)) u.title = r.chance(0.5) ? null : r.pick(WORDS);
      return sprinkle(r, u);
    }
    case 7:
      return sprinkle(r, {
        sessionUpdate: 'plan',
        entries: Array.from({ length: r.int(3) }, () => ({
          content: r.pick(WORDS),
          priority: 'high',
          status: r.pick(['pending', 'completed']),
        })),
      });
    case 8:
      return sprinkle(r, {
        sessionUpdate: 'available_commands_update',
        availableCommands: [{ name: r.pick(WORDS), description: 'd' }],
      });
    case 9:
      return sprinkle(r, { sessionUpdate: 'current_mode_update', currentModeId: r.pick(['ask', 'code']) });
    case 10:
      return sprinkle(r, {
        sessionUpdate: 'config_option_update',
        configOptions: [{ id: 'model', currentValue: r.pick(WORDS) }],
      });
    case 11:
      return sprinkle(r, {
        sessionUpdate: 'session_info_update',
        ...(r.chance(0.7) ? { title: r.chance(0.2) ? null : r.pick(WORDS) } : {}),
        ...(r.chance(0.3) ? { updatedAt: '2026-01-01T00:00:00Z' } : {}),
      });
    case 12:
      return sprinkle(r, {
        sessionUpdate: 'usage_update',
        used: r.int(1000),
        size: 1000,
        ...(r.chance(0.3) ? { cost: { amount: 0.5, currency: 'USD' } } : {}),
      });
    case 13:
      return sprinkle(r, { sessionUpdate: 'notice', severity: r.pick(['info', 'warning']), title: r.pick(WORDS) });
    case 14:
      return sprinkle(r, {
        sessionUpdate: 'compaction_update',
        compactionId: r.pick(['c1', 'c2']),
        status: r.pick(['started', 'completed', null]),
        ...(r.chance(0.3) ? { summary: [genBlock(r)] } : {}),
      });
    case 15:
      return sprinkle(r, {
        sessionUpdate: 'compaction_summary_chunk',
        compactionId: r.pick(['c1', 'c2']),
        content: genBlock(r),
      });
    case 16:
      return sprinkle(r, {
        sessionUpdate: r.pick(['future_variant', 'x_custom', 'constructor', '__proto__']),
        data: genValue(r),
      });
    case 17:
      // Malformed: missing or mistyped key fields, not an object.
      return r.pick([
        { sessionUpdate: 'agent_message_chunk' },
        { sessionUpdate: 'tool_call', toolCallId: 7 },
        { sessionUpdate: 'compaction_summary_chunk', compactionId: 'c1' },
        { sessionUpdate: 42 },
        { noVariant: true },
        'a string',
        [1, 2],
        null,
      ]);
    default:
      return { sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: r.pick(WORDS) } };
  }
}

/**
 * A random recording: trace records `{direction, payload}` of one or two
 * sessions, with prompts, setup results and agent requests.
 */
export function genRecording(r, { messages = 150, sessions = ['s1', 's2'] } = {}) {
  const records = [];
  const send = (msg) => records.push({ direction: 'send', kind: 'x', payload: JSON.stringify(msg) });
  const recv = (msg) => records.push({ direction: 'receive', kind: 'x', payload: JSON.stringify(msg) });
  let ourId = 0;
  let theirId = 100;
  const ourOpen = [];
  const theirOpen = [];
  for (let i = 0; i < messages; i++) {
    const sid = r.pick(sessions);
    const roll = r.int(100);
    if (roll < 70) {
      recv({ jsonrpc: '2.0', method: 'session/update', params: { sessionId: sid, update: genUpdate(r) } });
    } else if (roll < 76) {
      const id = ++ourId;
      const method = r.pick([
        'session/prompt',
        'session/prompt',
        'session/load',
        'session/resume',
        'session/new',
        'session/set_mode',
        'session/set_config_option',
      ]);
      // A mode the client sets (or a mistyped one), folded on success.
      const mode = method === 'session/set_mode' ? { modeId: r.pick(['ask', 'code', 7]) } : {};
      send({ jsonrpc: '2.0', id, method, params: { sessionId: sid, prompt: [], ...mode } });
      ourOpen.push({ id, method, sid });
    } else if (roll < 84 && ourOpen.length > 0) {
      const { id, method, sid: s } = ourOpen.splice(r.int(ourOpen.length), 1)[0];
      if (r.chance(0.15)) recv({ jsonrpc: '2.0', id, error: { code: -32603, message: 'no' } });
      else if (method === 'session/prompt')
        recv({ jsonrpc: '2.0', id, result: { stopReason: r.pick(['end_turn', 'cancelled', 'max_tokens']) } });
      else
        recv({
          jsonrpc: '2.0',
          id,
          result: {
            sessionId: method === 'session/new' ? r.pick(sessions) : s,
            modes: { currentModeId: 'ask', availableModes: [{ id: 'ask', name: 'Ask' }] },
            configOptions: [{ id: 'model' }],
          },
        });
    } else if (roll < 90) {
      const id = r.chance(0.5) ? ++theirId : `r${++theirId}`;
      recv({
        jsonrpc: '2.0',
        id,
        method: r.pick(['session/request_permission', 'x/ask']),
        params: { sessionId: sid, toolCall: { toolCallId: 't1' } },
      });
      theirOpen.push(id);
    } else if (roll < 96 && theirOpen.length > 0) {
      const id = theirOpen.splice(r.int(theirOpen.length), 1)[0];
      send({ jsonrpc: '2.0', id, result: { outcome: { outcome: 'cancelled' } } });
    } else {
      // Noise the fold must skip: other notifications, unknown responses.
      recv(
        r.pick([
          { jsonrpc: '2.0', method: 'x/other', params: {} },
          { jsonrpc: '2.0', id: 99999, result: null },
          { jsonrpc: '2.0', method: 'session/update', params: { update: {} } },
        ]),
      );
    }
  }
  return records;
}

/**
 * Random small limits (or the defaults). Half of them cap the total bytes
 * (entries here hold from a few bytes to a few hundred), some of those
 * with room for every entry, so that only `maxTotalBytes` evicts.
 */
export function genLimits(r) {
  if (r.chance(0.4)) return undefined;
  const limits = {
    maxEntries: 1 + r.int(12),
    maxTextBytes: r.int(120),
    maxBlocks: 1 + r.int(4),
    maxKeys: 1 + r.int(6),
  };
  if (r.chance(0.5)) {
    limits.maxTotalBytes = r.int(1200);
    if (r.chance(0.5)) limits.maxEntries = 5000;
  }
  return limits;
}

/**
 * The bytes a state's entries count toward `maxTotalBytes`, recomputed
 * from the state (a snapshot or a fold's toJSON()): message text, and the
 * jsonSize of all else an entry holds (its tool call's or compaction's
 * fields included). One number per entry.
 */
export function entryBytes(state, jsonSize) {
  return state.entries.map((e) => {
    switch (e.kind) {
      case 'tool_call':
        return jsonSize(state.toolCalls[e.toolCallId]);
      case 'notice':
        return jsonSize(e.notice);
      case 'unknown':
        return jsonSize(e.update);
    }
    let n = e.messageId === undefined ? 0 : jsonSize(e.messageId);
    for (const b of e.content) {
      const textOnly =
        b !== null &&
        typeof b === 'object' &&
        b.type === 'text' &&
        typeof b.text === 'string' &&
        Object.keys(b).length === 2;
      n += textOnly ? Buffer.byteLength(b.text) : jsonSize(b);
    }
    n += jsonSize(e.extra ?? {});
    if (e.kind === 'compaction') n += jsonSize(state.compactions[e.compactionId]);
    return n;
  });
}

/** JSON with sorted keys: equal values print the same. */
export function canonical(v) {
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  if (v !== null && typeof v === 'object') {
    return `{${Object.keys(v)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical(v[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(v);
}
