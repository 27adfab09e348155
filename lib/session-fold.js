'use strict';

// The plain JS reference fold of `session/update` streams: the same rules
// as the core's `view` module (crates/acp-core/src/view/fold.rs), which a
// property test checks on random streams. Usable on its own by hosts that
// fold updates themselves, and by the bench as the JS baseline.
//
// Rules, in short: message chunks continue the last entry of the same kind
// and messageId (text-only blocks are concatenated); tool calls and
// compactions merge by id (`tool_call_update`/`compaction_update` leave a
// field alone when it is null); `plan` replaces; mode, config, commands,
// info and usage updates merge their fields; `notice` is an entry; all
// else is kept whole as an `unknown` entry. Limits: `maxEntries` entries
// and `maxTotalBytes` bytes of entries (oldest dropped, with the tool
// call/compaction they introduced; never the entry the update went into;
// nor does an update grow one entry past maxTotalBytes: a chunk, block or
// merge that would is dropped and counted like the per-entry limits),
// `maxTextBytes` UTF-8 bytes and `maxBlocks` blocks per entry, `maxKeys`
// keys per merged object (an update whose new keys do not all fit adds
// none of them), `maxEntries` pending agent requests. An entry's bytes: its
// message text's UTF-8 bytes, plus the `jsonSize` of what updates added
// (messageId, non-text blocks, extra keys, the notice or unknown update,
// the fields of the tool call/compaction it introduced; a key that
// replaces another counts the difference).

const { escapeMarkdown } = require('./sanitize.js');

const DEFAULT_LIMITS = Object.freeze({
  maxEntries: 50_000,
  maxTextBytes: 4 * 1024 * 1024,
  maxBlocks: 1024,
  maxKeys: 256,
  maxTotalBytes: 64 * 1024 * 1024,
});

// The structural size of a JSON value (crates/acp-core/src/view/size.rs,
// which must give the same numbers): strings and keys their UTF-8 bytes,
// numbers/booleans/null SCALAR, each array element or object member ITEM more.
const SCALAR = 8;
const ITEM = 16;

/** The structural size of a JSON value (what it counts toward maxTotalBytes). */
function jsonSize(v) {
  // With a stack, not recursion: an agent's value can nest deeper than
  // JS's call stack (JSON.parse takes any depth).
  let n = 0;
  const todo = [v];
  while (todo.length > 0) {
    const x = todo.pop();
    if (typeof x === 'string') n += Buffer.byteLength(x, 'utf8');
    else if (x === null || typeof x !== 'object') n += SCALAR;
    else if (Array.isArray(x)) {
      n += ITEM * x.length;
      for (const y of x) todo.push(y);
    } else {
      for (const k of Object.keys(x)) {
        n += ITEM + Buffer.byteLength(k, 'utf8');
        todo.push(x[k]);
      }
    }
  }
  return n;
}

const memberSize = (k, v) => ITEM + Buffer.byteLength(k, 'utf8') + jsonSize(v);

// What a view keeps of an agent's value (crates/acp-core/src/view/bounded.rs,
// which must decide the same): an array or object over maxTotalBytes
// (jsonSize), or any value nested deeper than MAX_DEPTH, becomes
// `{$omitted: 'size'|'depth', bytes}`; except that an object of at most
// maxKeys members is opened (through MAX_DESCENTS objects at most) and its
// members are weighed the same way, and while they add up to more than
// twice maxTotalBytes (more than a merge could ever take), the biggest
// array or object among them (ties: by UTF-8 key) becomes a marker.
// Strings, numbers and literals cost their bytes (no tree) and stay. Lone
// surrogates become U+FFFD first, keys too.
const MAX_DEPTH = 64;
const MAX_DESCENTS = 3;

const LONE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;
const LONE_ALL = new RegExp(LONE.source, 'g');
const isWellFormed =
  typeof String.prototype.isWellFormed === 'function' ? (s) => s.isWellFormed() : (s) => !LONE.test(s);
const toWellFormed =
  typeof String.prototype.toWellFormed === 'function' ? (s) => s.toWellFormed() : (s) => s.replace(LONE_ALL, '\ufffd');

/** jsonSize, depth (a scalar 0, a container 1 + its deepest member's) and whether a string or key is not well formed. */
function measure(v) {
  let size = 0;
  let depth = 0;
  let lone = false;
  const todo = [v, 0];
  while (todo.length > 0) {
    const d = todo.pop();
    const x = todo.pop();
    if (typeof x === 'string') {
      size += Buffer.byteLength(x, 'utf8');
      if (!lone && !isWellFormed(x)) lone = true;
    } else if (x === null || typeof x !== 'object') size += SCALAR;
    else {
      if (d + 1 > depth) depth = d + 1;
      if (Array.isArray(x)) {
        size += ITEM * x.length;
        for (const y of x) todo.push(y, d + 1);
      } else {
        for (const k of Object.keys(x)) {
          size += ITEM + Buffer.byteLength(k, 'utf8');
          if (!lone && !isWellFormed(k)) lone = true;
          todo.push(x[k], d + 1);
        }
      }
    }
  }
  return { size, depth, lone };
}

/** A copy of `v` with every string and key well formed (any depth). */
function wellFormed(v) {
  const fix = (x) => (typeof x === 'string' ? toWellFormed(x) : x);
  const copy = (x) => (x === null || typeof x !== 'object' ? fix(x) : Array.isArray(x) ? [] : {});
  const root = copy(v);
  const todo = [[v, root]];
  while (todo.length > 0) {
    const [from, to] = /** @type {unknown[]} */ (todo.pop()); // not empty
    if (from === null || typeof from !== 'object') continue;
    for (const k of Object.keys(from)) {
      const y = copy(from[k]);
      if (Array.isArray(to)) to.push(y);
      else setKey(to, toWellFormed(k), y);
      todo.push([from[k], y]);
    }
  }
  return root;
}

/**
 * The plain-text chunk the core folds on its fast path, without bounding
 * (crates/acp-core/src/view/fast.rs, `TextChunk`): exactly these keys, a
 * text block, well-formed strings.
 */
function plainTextChunk(u) {
  if (!isObject(u) || !hasOwn(CHUNK_KINDS, u.sessionUpdate) || !isObject(u.content)) return false;
  for (const k of Object.keys(u)) if (k !== 'sessionUpdate' && k !== 'content' && k !== 'messageId') return false;
  const { content, messageId } = u;
  const keys = Object.keys(content);
  if (keys.length !== 2 || content.type !== 'text' || typeof content.text !== 'string' || !hasOwn(content, 'text'))
    return false;
  if (messageId !== undefined && messageId !== null && (typeof messageId !== 'string' || !isWellFormed(messageId)))
    return false;
  return isWellFormed(content.text);
}

const omitted = (reason, bytes) => ({ $omitted: reason, bytes });
const markerSize = (reason) => jsonSize(omitted(reason, 0));
const isContainer = (v) => v !== null && typeof v === 'object';
const byKeyBytes = (a, b) => Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'));

/** `v` as a view with `limits` keeps it (see above). */
function boundValue(v, limits) {
  const caps = { value: limits.maxTotalBytes, keys: limits.maxKeys, total: 2 * limits.maxTotalBytes };
  const m = measure(v);
  return bound(m.lone ? wellFormed(v) : v, m, caps, MAX_DEPTH, MAX_DESCENTS).value;
}

/** `{value, size}`: what is kept of `v` (measured `m`), and its jsonSize. */
function bound(v, m, caps, depthLeft, descents) {
  if (m.depth <= depthLeft && (m.size <= caps.value || !isContainer(v))) return { value: v, size: m.size };
  const reason = m.depth > depthLeft ? 'depth' : 'size';
  const marker = { value: omitted(reason, m.size), size: markerSize(reason) };
  if (descents === 0 || depthLeft === 0 || !isObject(v) || Object.keys(v).length > caps.keys) return marker;
  const items = Object.keys(v).map((k) => {
    const inner = measure(v[k]);
    const kept = bound(v[k], inner, caps, depthLeft - 1, descents - 1);
    return {
      k,
      measured: inner.size,
      value: kept.value,
      size: ITEM + Buffer.byteLength(k, 'utf8') + kept.size,
      container: isContainer(v[k]),
    };
  });
  let total = items.reduce((n, it) => n + it.size, 0);
  if (total > caps.total) {
    const order = [...items].sort((a, b) => b.size - a.size || byKeyBytes(a.k, b.k));
    for (const it of order) {
      if (total <= caps.total) break;
      const now = ITEM + Buffer.byteLength(it.k, 'utf8') + markerSize('size');
      if (now < it.size && it.container) {
        total += now - it.size;
        it.value = omitted('size', it.measured);
        it.size = now;
      }
    }
  }
  const out = {};
  for (const it of items) setKey(out, it.k, it.value);
  return { value: out, size: total };
}

const CHUNK_KINDS = { user_message_chunk: 'user', agent_message_chunk: 'agent', agent_thought_chunk: 'thought' };
const MERGED = {
  current_mode_update: 'modes',
  config_option_update: 'config',
  available_commands_update: 'commands',
  session_info_update: 'info',
  usage_update: 'usage',
};

const hasOwn = (o, k) => Object.hasOwn(o, k);
const isObject = (v) => v !== null && typeof v === 'object' && !Array.isArray(v);

/** Set an own property, even `__proto__`. */
function setKey(o, k, v) {
  if (k === '__proto__')
    Object.defineProperty(o, k, { value: v, writable: true, enumerable: true, configurable: true });
  else o[k] = v;
}

/** Every own key of `from` into `into` (`from` absent: nothing). */
function assignKeys(into, from) {
  for (const [k, v] of Object.entries(from ?? {})) setKey(into, k, v);
}

/** `{type:"text",text}` and nothing else. */
function textOnly(block) {
  if (!isObject(block) || block.type !== 'text' || typeof block.text !== 'string') return undefined;
  return Object.keys(block).length === 2 ? block.text : undefined;
}

/** Deep equality of JSON values. */
function jsonEqual(a, b) {
  if (a === b) return true; // the common case, without the stack
  // With a stack, like jsonSize: any depth.
  const todo = [[a, b]];
  while (todo.length > 0) {
    const [x, y] = /** @type {unknown[]} */ (todo.pop()); // not empty
    if (x === y) continue;
    if (typeof x !== 'object' || typeof y !== 'object' || x === null || y === null) return false;
    if (Array.isArray(x) !== Array.isArray(y)) return false;
    const kx = Object.keys(x);
    if (kx.length !== Object.keys(y).length) return false;
    for (const k of kx) {
      if (!hasOwn(y, k)) return false;
      todo.push([x[k], y[k]]);
    }
  }
  return true;
}

/** @typedef {import('../types/session-view').SessionFold} SessionFoldApi */
/** @typedef {import('../types/session-view').SessionViewState} SessionViewState */

/** @implements {SessionFoldApi} */
class SessionFold {
  #limits;
  #next = 0;
  #newTurn = false; // a prompt was sent since the last entry was pushed
  #entries = []; // kept entries, oldest first
  #totalBytes = 0; // their bytes (textBytes + otherBytes)
  #toolCalls = new Map(); // id → { index, fields }
  #compactions = new Map();
  // What each merged session-wide object counts: each stays within
  // maxTotalBytes (its keys are bounded by maxKeys, and a value is a line).
  #fieldBytes = { modes: 0, config: 0, commands: 0, info: 0, usage: 0 };

  /**
   * @param {string} sessionId
   * @param {import('../types/session-view').SessionViewLimits} [limits]
   */
  constructor(sessionId, limits = {}) {
    /** @type {Record<keyof typeof DEFAULT_LIMITS, number>} */
    const l = { ...DEFAULT_LIMITS };
    for (const k of Object.keys(DEFAULT_LIMITS)) if (limits[k] !== undefined) l[k] = limits[k];
    l.maxEntries = Math.max(1, l.maxEntries);
    this.#limits = l;
    this.sessionId = sessionId;
    this.droppedEntries = 0;
    this.droppedKeys = 0;
    /** @type {SessionViewState['plan']} */
    this.plan = null;
    /** @type {SessionViewState['modes']} */
    this.modes = {};
    /** @type {SessionViewState['config']} */
    this.config = {};
    /** @type {SessionViewState['commands']} */
    this.commands = {};
    /** @type {SessionViewState['info']} */
    this.info = {};
    /** @type {SessionViewState['usage']} */
    this.usage = null;
    /** @type {SessionViewState['stopReason']} */
    this.stopReason = null;
    this.running = false;
    this.pending = []; // { key, id, method, params }
  }

  /**
   * Merge fields; new keys that do not all fit under maxKeys are all
   * dropped (counted); so are all keys of a merge that would grow the
   * bytes by more than `room`. Returns how many bytes `into` grew by (or
   * shrank: < 0).
   */
  #merge(into, from, skip, keepNull, room = Infinity) {
    const keys = Object.keys(from).filter((k) => !skip.includes(k) && (keepNull || from[k] !== null));
    let added = 0;
    for (const k of keys) if (!hasOwn(into, k)) added++;
    const keysFit = Object.keys(into).length + added <= this.#limits.maxKeys;
    let grown = 0;
    let shrunk = 0;
    for (const k of keys) {
      if (hasOwn(into, k)) {
        grown += jsonSize(from[k]);
        shrunk += jsonSize(into[k]);
      } else if (keysFit) grown += memberSize(k, from[k]);
    }
    if (grown > shrunk && grown - shrunk > room) {
      this.droppedKeys += keys.length;
      return 0;
    }
    if (!keysFit) this.droppedKeys += added;
    for (const k of keys) if (keysFit || hasOwn(into, k)) setKey(into, k, from[k]);
    return grown - shrunk;
  }

  /** How many more bytes `entry` may take (maxTotalBytes bounds one entry too). */
  #room(entry) {
    return this.#limits.maxTotalBytes - entry.textBytes - entry.otherBytes;
  }

  /** A new entry at the end; the caller #fit()s once the update is in it. */
  #push(kind, otherBytes = 0) {
    const entry = {
      index: this.#next++,
      kind,
      content: [],
      extra: {},
      textBytes: 0,
      otherBytes: 0,
      droppedBytes: 0,
      droppedBlocks: 0,
    };
    this.#newTurn = false;
    this.#entries.push(entry);
    this.#added(entry, otherBytes);
    return entry;
  }

  /** `bytes` more (or fewer) of `entry`'s non-text content. */
  #added(entry, bytes) {
    entry.otherBytes += bytes;
    this.#totalBytes += bytes;
  }

  /** `entry` grew by `bytes` (other than text, added by #append); then #fit. */
  #grew(entry, bytes) {
    this.#added(entry, bytes);
    this.#fit(entry);
  }

  /** The oldest entries go while over maxEntries or maxTotalBytes; never `keep`. */
  #fit(keep) {
    const l = this.#limits;
    while (this.#entries.length > l.maxEntries || this.#totalBytes > l.maxTotalBytes) {
      if (this.#entries[0] === keep) break;
      const old = this.#entries.shift();
      this.#totalBytes -= old.textBytes + old.otherBytes;
      this.droppedEntries++;
      if (old.key !== undefined) {
        const map = old.kind === 'tool_call' ? this.#toolCalls : this.#compactions;
        if (map.get(old.key)?.index === old.index) map.delete(old.key);
      }
    }
  }

  /** A notice or unknown entry: `body` is all it holds. */
  #whole(kind, body) {
    const entry = this.#push(kind, jsonSize(body));
    entry.body = body;
    this.#fit(entry);
  }

  #unknown(update) {
    this.#whole('unknown', update);
  }

  #append(entry, block) {
    const l = this.#limits;
    const text = textOnly(block);
    if (text !== undefined) {
      const bytes = Buffer.byteLength(text, 'utf8');
      if (entry.textBytes + bytes > l.maxTextBytes || bytes > this.#room(entry)) {
        entry.droppedBytes += bytes;
        return;
      }
      const last = entry.content[entry.content.length - 1];
      if (textOnly(last) !== undefined) last.text += text;
      else if (entry.content.length >= l.maxBlocks) {
        entry.droppedBlocks++;
        return;
      } else entry.content.push({ type: 'text', text }); // own copy: later chunks are appended to it
      entry.textBytes += bytes;
      this.#totalBytes += bytes;
      return;
    }
    const bytes = jsonSize(block);
    if (entry.content.length >= l.maxBlocks || bytes > this.#room(entry)) {
      entry.droppedBlocks++;
      return;
    }
    this.#added(entry, bytes);
    entry.content.push(block);
  }

  /** The bytes the kept entries count toward `maxTotalBytes`. */
  get totalBytes() {
    return this.#totalBytes;
  }

  /** Fold one `session/update`'s `update` value. */
  applyUpdate(update) {
    if (!plainTextChunk(update)) update = boundValue(update, this.#limits);
    this.#apply(update);
  }

  /**
   * The client's own `session/set_mode` that succeeded, which agents do not
   * echo: folded as the update an agent would send, its mode the client's
   * (not bounded as an agent's update; the merge bounds what it adds, as
   * the core's views do).
   */
  modeSet(modeId) {
    this.#apply({ sessionUpdate: 'current_mode_update', currentModeId: modeId });
  }

  /** Fold an update already within this fold's limits. */
  #apply(update) {
    if (!isObject(update) || typeof update.sessionUpdate !== 'string') return this.#unknown(update);
    const variant = update.sessionUpdate;
    const kind = hasOwn(CHUNK_KINDS, variant) ? CHUNK_KINDS[variant] : undefined;
    if (kind !== undefined) return this.#chunk(kind, update);
    switch (variant) {
      case 'tool_call':
        return this.#keyed(update, 'toolCallId', true);
      case 'tool_call_update':
        return this.#keyed(update, 'toolCallId', false);
      case 'compaction_update':
        return this.#keyed(update, 'compactionId', false);
      case 'compaction_summary_chunk':
        return this.#summaryChunk(update);
      case 'plan': {
        const plan = {};
        for (const k of Object.keys(update)) if (k !== 'sessionUpdate') setKey(plan, k, update[k]);
        // Kept as the agent sent it: `entries` is not checked here.
        this.plan = /** @type {SessionViewState['plan']} */ (plan);
        return;
      }
      case 'notice': {
        const notice = {};
        for (const k of Object.keys(update)) if (k !== 'sessionUpdate') setKey(notice, k, update[k]);
        return this.#whole('notice', notice);
      }
    }
    const field = hasOwn(MERGED, variant) ? MERGED[variant] : undefined;
    if (field === undefined) return this.#unknown(update);
    if (field === 'usage') this.usage ??= {};
    this.#mergeField(field, update, ['sessionUpdate']);
  }

  /** Merge into a session-wide object, within its own maxTotalBytes. */
  #mergeField(field, from, skip) {
    const room = this.#limits.maxTotalBytes - this.#fieldBytes[field];
    this.#fieldBytes[field] += this.#merge(this[field], from, skip, true, room);
  }

  #chunk(kind, update) {
    if (!hasOwn(update, 'content')) return this.#unknown(update);
    const messageId = hasOwn(update, 'messageId') && update.messageId !== null ? update.messageId : undefined;
    const last = this.#entries[this.#entries.length - 1];
    let entry;
    if (last !== undefined && !this.#newTurn && last.kind === kind && jsonEqual(last.messageId, messageId))
      entry = last;
    else {
      entry = this.#push(kind, messageId === undefined ? 0 : jsonSize(messageId));
      entry.messageId = messageId;
    }
    // The keys count before the block is weighed against the room left
    // (as the core does).
    this.#added(
      entry,
      this.#merge(entry.extra, update, ['sessionUpdate', 'content', 'messageId'], true, this.#room(entry)),
    );
    this.#append(entry, update.content);
    this.#fit(entry);
  }

  #keyed(update, idKey, keepNull) {
    const id = update[idKey];
    if (typeof id !== 'string') return this.#unknown(update);
    const map = idKey === 'toolCallId' ? this.#toolCalls : this.#compactions;
    if (!map.has(id)) this.#introduce(id, idKey);
    const keyed = map.get(id);
    // Its fields count toward the entry that introduced it.
    const entry = this.#entries[keyed.index - this.#entries[0].index];
    this.#grew(entry, this.#merge(keyed.fields, update, ['sessionUpdate'], keepNull, this.#room(entry)));
  }

  #introduce(id, idKey) {
    const isTool = idKey === 'toolCallId';
    const entry = this.#push(isTool ? 'tool_call' : 'compaction', memberSize(idKey, id));
    entry.key = id;
    (isTool ? this.#toolCalls : this.#compactions).set(id, { index: entry.index, fields: { [idKey]: id } });
  }

  #summaryChunk(update) {
    const id = update.compactionId;
    if (typeof id !== 'string' || !hasOwn(update, 'content')) return this.#unknown(update);
    if (!this.#compactions.has(id)) this.#introduce(id, 'compactionId');
    const index = this.#compactions.get(id).index;
    const entry = this.#entries[index - this.#entries[0].index];
    this.#added(
      entry,
      this.#merge(entry.extra, update, ['sessionUpdate', 'compactionId', 'content'], true, this.#room(entry)),
    );
    this.#append(entry, update.content);
    this.#fit(entry);
  }

  /** The result of `session/new`, `session/load` or `session/resume`. */
  applySetup(result) {
    result = boundValue(result, this.#limits);
    if (!isObject(result)) return;
    if (isObject(result.modes)) this.#mergeField('modes', result.modes, []);
    if (hasOwn(result, 'configOptions')) this.#mergeField('config', { configOptions: result.configOptions }, []);
  }

  /**
   * The result of the client's own `session/set_config_option`, which
   * agents do not echo: folded as the update an agent would send, from the
   * result bounded as any result is (as the core's views do).
   */
  configOptionsSet(result) {
    result = boundValue(result, this.#limits);
    if (isObject(result) && Array.isArray(result.configOptions)) {
      this.#apply({ sessionUpdate: 'config_option_update', configOptions: result.configOptions });
    }
  }

  /** The index the next entry will have. */
  get nextIndex() {
    return this.#next;
  }

  promptStarted() {
    this.running = true;
    this.#newTurn = true; // the reply starts a new entry even without a messageId
  }

  /** The answer to a `session/prompt`: its result, or undefined for an error. */
  promptEnded(result) {
    this.running = false;
    if (result !== undefined) result = boundValue(result, this.#limits);
    if (isObject(result) && hasOwn(result, 'stopReason')) this.stopReason = result.stopReason;
  }

  requestWaiting(key, id, method, params) {
    if (this.pending.length >= this.#limits.maxEntries) this.pending.shift();
    this.pending.push({ key, id: boundValue(id, this.#limits), method, params: boundValue(params, this.#limits) });
  }

  requestSettled(key) {
    this.pending = this.pending.filter((p) => p.key !== key);
  }

  /** The state, shaped like a view's `snapshot()`. */
  toJSON() {
    const entries = this.#entries.map(entryJSON);
    const keyed = (map) => {
      /** @type {Record<string, any>} */
      const out = {};
      for (const [k, v] of map) setKey(out, k, v.fields);
      return out;
    };
    return {
      sessionId: this.sessionId,
      entries,
      droppedEntries: this.droppedEntries,
      toolCalls: keyed(this.#toolCalls),
      compactions: keyed(this.#compactions),
      plan: this.plan,
      modes: this.modes,
      config: this.config,
      commands: this.commands,
      info: this.info,
      usage: this.usage,
      stopReason: this.stopReason,
      running: this.running,
      pending: this.pending.map(({ id, method, params }) => ({ id, method, params })),
      droppedKeys: this.droppedKeys,
    };
  }
}

/** @returns {import('../types/session-view').SessionEntry} */
function entryJSON(e) {
  /** @type {any} built field by field, by kind */
  const out = { index: e.index, kind: e.kind };
  switch (e.kind) {
    case 'tool_call':
      out.toolCallId = e.key;
      return out;
    case 'notice':
      out.notice = e.body;
      return out;
    case 'unknown':
      out.update = e.body === undefined ? null : e.body;
      return out;
    case 'compaction':
      out.compactionId = e.key;
  }
  if (e.messageId !== undefined) out.messageId = e.messageId;
  out.content = e.content;
  if (Object.keys(e.extra).length > 0) out.extra = e.extra;
  if (e.droppedBytes > 0) out.droppedBytes = e.droppedBytes;
  if (e.droppedBlocks > 0) out.droppedBlocks = e.droppedBlocks;
  return out;
}

/** Default limits of a RecordingFold beyond the view's: sessions folded, prompts kept per session. */
/** @type {Readonly<{ maxSessions: number, maxOpenRequests: number }>} */
const RECORDING_LIMITS = Object.freeze({ maxSessions: 100, maxOpenRequests: 10_000 });

/**
 * Fold trace records (as `acp-native record` and `client.saveHistory()`
 * write them) one at a time into sessions, by the same rules as a live
 * view. Also keeps the prompts the client sent (`session/prompt`), each
 * with the index of the first entry after it, for a transcript. Bounded:
 * at most `maxSessions` sessions (the messages of others are counted in
 * `skippedUpdates`), each within the view limits; a session's prompts are
 * cut like messages (`maxTextBytes` each) and kept within `maxEntries`
 * and `maxTotalBytes` (oldest dropped); `maxOpenRequests` unanswered
 * requests remembered in each direction.
 */
class RecordingFold {
  #limits;
  #maxSessions;
  #maxOpen;
  #sessions = new Map(); // sid → SessionFold
  #prompts = new Map(); // sid → [{ at, content }]
  #ours = new Map(); // wire id → { method, sid }
  #theirs = new Map(); // wire id → sid
  skippedUpdates = 0;

  constructor(
    limits = {},
    { maxSessions = RECORDING_LIMITS.maxSessions, maxOpenRequests = RECORDING_LIMITS.maxOpenRequests } = {},
  ) {
    this.#limits = limits;
    this.#maxSessions = maxSessions;
    this.#maxOpen = maxOpenRequests;
  }

  /** Remember an unanswered request; the oldest is forgotten past maxOpenRequests. */
  #open(map, key, value) {
    map.set(key, value);
    if (map.size > this.#maxOpen) map.delete(map.keys().next().value);
  }

  /** The session's fold, made on first sight; undefined past maxSessions. */
  #state(sid) {
    let s = this.#sessions.get(sid);
    if (!s) {
      if (this.#sessions.size >= this.#maxSessions) {
        this.skippedUpdates++;
        return undefined;
      }
      this.#sessions.set(sid, (s = new SessionFold(sid, this.#limits)));
    }
    return s;
  }

  #promptSent(sid, prompt, fold) {
    if (!Array.isArray(prompt) || !fold) return;
    const maxText = this.#limits.maxTextBytes ?? DEFAULT_LIMITS.maxTextBytes;
    const maxEntries = this.#limits.maxEntries ?? DEFAULT_LIMITS.maxEntries;
    let room = maxText;
    const content = [];
    for (const block of prompt.slice(0, DEFAULT_LIMITS.maxBlocks)) {
      const size = jsonSize(block);
      if (size > room) break;
      room -= size;
      content.push(block);
    }
    const maxTotal = this.#limits.maxTotalBytes ?? DEFAULT_LIMITS.maxTotalBytes;
    let list = this.#prompts.get(sid);
    if (!list) this.#prompts.set(sid, (list = Object.assign([], { bytes: 0 })));
    list.push({ at: fold.nextIndex, content, cut: content.length < prompt.length, bytes: maxText - room });
    list.bytes += maxText - room;
    while (list.length > maxEntries || list.bytes > maxTotal) list.bytes -= list.shift().bytes;
  }

  /**
   * One trace record (`{direction, payload, …}`); `msg`: its payload,
   * already parsed. False when it is not one (skipped).
   */
  push(record, msg) {
    if (!isObject(record) || typeof record.payload !== 'string') return false;
    if (msg === undefined) {
      try {
        msg = JSON.parse(record.payload);
      } catch {
        return false;
      }
    }
    const sent = record.direction === 'send' ? true : record.direction === 'receive' ? false : undefined;
    if (sent === undefined || !isObject(msg)) return false;
    const sessionOf = (params) =>
      isObject(params) && typeof params.sessionId === 'string' ? params.sessionId : undefined;
    const method = typeof msg.method === 'string' ? msg.method : undefined;
    const key = hasOwn(msg, 'id') ? JSON.stringify(msg.id) : undefined;
    const params = msg.params;
    if (!sent && method !== undefined && key === undefined) {
      if (method !== 'session/update') return true;
      const sid = sessionOf(params);
      if (sid === undefined) return true;
      this.#state(sid)?.applyUpdate(hasOwn(params, 'update') ? params.update : null);
    } else if (!sent && method !== undefined) {
      const sid = sessionOf(params);
      if (sid === undefined) return true;
      const s = this.#state(sid);
      if (!s) return true;
      s.requestWaiting(key, msg.id, method, params === undefined ? null : params);
      this.#open(this.#theirs, key, sid);
    } else if (!sent && key !== undefined) {
      const req = this.#ours.get(key);
      if (!req) return true;
      this.#ours.delete(key);
      const result = hasOwn(msg, 'error') || !hasOwn(msg, 'result') ? undefined : msg.result;
      if (req.method === 'session/prompt' && req.sid !== undefined) this.#state(req.sid)?.promptEnded(result);
      else if (req.method === 'session/new') {
        if (isObject(result) && typeof result.sessionId === 'string') this.#state(result.sessionId)?.applySetup(result);
      } else if ((req.method === 'session/load' || req.method === 'session/resume') && req.sid !== undefined) {
        if (result !== undefined) this.#state(req.sid)?.applySetup(result);
      } else if (req.method === 'session/set_mode' && req.sid !== undefined) {
        // The client's own changes, which agents do not echo: folded as the
        // update an agent would send (as the core's views do).
        if (result !== undefined && typeof req.modeId === 'string') {
          this.#state(req.sid)?.modeSet(req.modeId);
        }
      } else if (req.method === 'session/set_config_option' && req.sid !== undefined) {
        if (result !== undefined) this.#state(req.sid)?.configOptionsSet(result);
      }
    } else if (sent && method !== undefined && key !== undefined) {
      const sid = sessionOf(params);
      if (method === 'session/prompt' && sid !== undefined) {
        const s = this.#state(sid);
        s?.promptStarted();
        this.#promptSent(sid, params.prompt, s);
      }
      this.#open(this.#ours, key, { method, sid, modeId: isObject(params) ? params.modeId : undefined });
    } else if (sent && method === undefined && key !== undefined) {
      const sid = this.#theirs.get(key);
      if (sid !== undefined) {
        this.#theirs.delete(key);
        this.#sessions.get(sid)?.requestSettled(key);
      }
    }
    return true;
  }

  /** The session ids folded, in order of first sight. */
  sessionIds() {
    return [...this.#sessions.keys()];
  }

  /** One session's state (`toJSON()` of its fold), or undefined. */
  state(sid) {
    return this.#sessions.get(sid)?.toJSON();
  }

  /** The prompts the client sent in a session: `[{ at, content, cut }]`, `at` the index of the first entry after it. */
  prompts(sid) {
    return (this.#prompts.get(sid) ?? []).map(({ at, content, cut }) => ({ at, content, cut }));
  }
}

/**
 * Fold a recording (NDJSON trace records, as `acp-native record` and
 * `client.saveHistory()` write them) into `{ sessions: { id: state } }`,
 * every session in it, by the same rules as a live view.
 *
 * @param {string} text
 * @param {import('../types/session-view').SessionViewLimits} [limits]
 * @returns {{ sessions: Record<string, SessionViewState> }}
 */
function foldRecording(text, limits) {
  const fold = new RecordingFold(limits, { maxSessions: Infinity, maxOpenRequests: Infinity });
  for (let line of text.split('\n')) {
    if (line.endsWith('\r')) line = line.slice(0, -1);
    let record;
    try {
      record = JSON.parse(line);
    } catch {
      continue;
    }
    fold.push(record);
  }
  /** @type {Record<string, SessionViewState>} */
  const out = {};
  for (const sid of fold.sessionIds()) setKey(out, sid, fold.state(sid));
  return { sessions: out };
}

/**
 * The number of the last change a view's state holds: not enumerable, so
 * it stays out of comparisons and JSON; a copy made by JSON or
 * structuredClone loses it (then every change applies to the copy).
 */
function setSeq(state, seq) {
  Object.defineProperty(state, 'seq', { value: seq, writable: true, configurable: true, enumerable: false });
}

/**
 * Apply a view's change description (a `change` event) to a copy of its
 * state the host keeps: the result equals the view's new `snapshot()`.
 * A change the copy already holds (its `seq` at most the copy's: the copy
 * is a snapshot taken after it) is skipped, so a copy started from any
 * `snapshot()` stays exact.
 */
function applyChanges(state, changes) {
  if (typeof changes.seq === 'number') {
    if (typeof state.seq === 'number' && changes.seq <= state.seq) return state;
    setSeq(state, changes.seq);
  }
  if (changes.firstIndex !== undefined) {
    const keep = [];
    for (const e of state.entries) {
      if (e.index >= changes.firstIndex) keep.push(e);
      else if (e.kind === 'tool_call') delete state.toolCalls[e.toolCallId];
      else if (e.kind === 'compaction') delete state.compactions[e.compactionId];
    }
    state.entries = keep;
    state.droppedEntries = changes.droppedEntries;
  }
  const first = state.entries.length > 0 ? state.entries[0].index : 0;
  for (const a of changes.appended ?? []) {
    const entry = state.entries[a.index - first];
    // Text to your last block (a text block whenever this is not empty),
    // then new blocks, then the `extra` keys that changed.
    if (a.text !== '') entry.content[entry.content.length - 1].text += a.text;
    if (a.blocks !== undefined) entry.content.push(...a.blocks);
    if (a.extra !== undefined) assignKeys((entry.extra ??= {}), a.extra);
    // A chunk refused by a limit: the entry's new drop counters.
    if (hasOwn(a, 'droppedBytes')) entry.droppedBytes = a.droppedBytes;
    if (hasOwn(a, 'droppedBlocks')) entry.droppedBlocks = a.droppedBlocks;
  }
  for (const e of changes.newEntries ?? []) state.entries.push(e);
  assignKeys(state.toolCalls, changes.toolCalls);
  assignKeys(state.compactions, changes.compactions);
  // Ones the host has: just their keys that changed.
  for (const [map, fields] of [
    [state.toolCalls, changes.toolCallFields],
    [state.compactions, changes.compactionFields],
  ]) {
    for (const [id, changed] of Object.entries(fields ?? {})) assignKeys(map[id], changed);
  }
  // Pending agent requests: positions gone (ascending), then the new ones.
  if (changes.pendingRemoved !== undefined) {
    const gone = new Set(changes.pendingRemoved);
    state.pending = state.pending.filter((_, i) => !gone.has(i));
  }
  if (changes.pendingAdded !== undefined) state.pending.push(...changes.pendingAdded);
  for (const k of ['plan', 'stopReason', 'running', 'droppedKeys']) {
    if (hasOwn(changes, k)) state[k] = changes[k];
  }
  // Session-wide objects: the keys that changed (`usage` may be new).
  for (const k of ['modes', 'config', 'commands', 'info', 'usage']) {
    if (hasOwn(changes, k)) assignKeys((state[k] ??= {}), changes[k]);
  }
  return state;
}

/**
 * A Markdown transcript of a state (a view's `snapshot()` or a fold's
 * `toJSON()`). Agent text is escaped (escapeMarkdown): it cannot form a
 * heading, list, link, image, fence, table or HTML, so every `## …` turn
 * is one this function wrote. `## User` turns are the client's own prompts
 * (`prompts`: RecordingFold.prompts()); user messages that came from the
 * agent (a `session/load` replay) say so.
 */
function toMarkdown(state, { prompts = [] } = {}) {
  const out = [];
  const line = (s) => escapeMarkdown(s ?? '', { singleLine: true });
  const title = typeof state.info?.title === 'string' ? state.info.title : `Session ${state.sessionId}`;
  out.push(`# ${line(title)}`, '');
  if (state.droppedEntries > 0) out.push(`_${state.droppedEntries} earlier entries not kept._`, '');
  const blockText = (b) =>
    typeof b?.text === 'string'
      ? b.text
      : b?.type === 'resource_link'
        ? `${b.name ?? b.uri} <${b.uri}>`
        : `[${b?.type ?? 'block'}]`;
  const text = (content) => escapeMarkdown((Array.isArray(content) ? content : []).map(blockText).join(''));
  const quote = (s) =>
    s
      .split('\n')
      .map((l) => `> ${l}`)
      .join('\n');
  const first = state.entries.length > 0 ? state.entries[0].index : 0;
  // Prompts before the first kept entry went with the entries dropped.
  let p = state.droppedEntries > 0 ? prompts.findIndex((x) => x.at >= first) : 0;
  if (p < 0) p = prompts.length;
  const promptsBefore = (index) => {
    for (; p < prompts.length && prompts[p].at <= index; p++) {
      out.push('## User', '', text(prompts[p].content), '');
      if (prompts[p].cut) out.push('_(prompt cut)_', '');
    }
  };
  for (const e of state.entries) {
    promptsBefore(e.index);
    switch (e.kind) {
      case 'user':
        out.push('## User (as replayed by the agent)', '', text(e.content), '');
        break;
      case 'agent':
        out.push('## Agent', '', text(e.content), '');
        break;
      case 'thought':
        out.push(quote(`_Thinking:_ ${text(e.content)}`), '');
        break;
      case 'tool_call': {
        const t = state.toolCalls[e.toolCallId] ?? {};
        out.push(
          `- **Tool** ${line(t.title ?? e.toolCallId)}${t.kind ? ` (${line(t.kind)})` : ''}: ${line(t.status ?? 'pending')}`,
        );
        for (const loc of Array.isArray(t.locations) ? t.locations : []) {
          if (typeof loc?.path === 'string') out.push(`  - ${line(`${loc.path}${loc.line ? `:${loc.line}` : ''}`)}`);
        }
        out.push('');
        break;
      }
      case 'notice':
        out.push(
          `> **${line(e.notice?.severity ?? 'notice')}:** ${line(e.notice?.title ?? '')}${e.notice?.description ? ` — ${line(e.notice.description)}` : ''}`,
          '',
        );
        break;
      case 'compaction':
        out.push(
          `_Context compacted (${line(state.compactions[e.compactionId]?.status ?? 'unknown')})._ ${text(e.content)}`,
          '',
        );
        break;
      default:
        out.push(line(`[${e.update?.sessionUpdate ?? 'unknown update'}]`), '');
    }
  }
  promptsBefore(Infinity);
  if (state.plan && Array.isArray(state.plan.entries) && state.plan.entries.length > 0) {
    out.push('## Plan', '');
    for (const entry of state.plan.entries)
      out.push(`- [${entry?.status === 'completed' ? 'x' : ' '}] ${line(entry?.content ?? '')}`);
    out.push('');
  }
  if (state.stopReason !== null && state.stopReason !== undefined)
    out.push(`_Stop reason: ${line(state.stopReason)}_`, '');
  return out.join('\n');
}

module.exports = {
  SessionFold,
  RecordingFold,
  RECORDING_LIMITS,
  foldRecording,
  applyChanges,
  setSeq,
  toMarkdown,
  jsonSize,
  boundValue,
  setKey,
  LIMIT_NAMES: Object.keys(DEFAULT_LIMITS),
};
