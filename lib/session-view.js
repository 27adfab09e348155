'use strict';

// A live view of one session: the core folds the session's `session/update`
// stream (crates/acp-core/src/view), this object hands the state to JS at
// display rate. Opened with `client.session(sessionId, options)`.

const { emitIsolated } = require('./emit.js');
const { EventEmitter } = require('node:events');
const { toMarkdown, setKey, setSeq, LIMIT_NAMES } = require('./session-fold.js');
const { invalidArgument } = require('./errors.js');

const DEFAULT_INTERVAL_MS = 16;
/**
 * What one `change` event carries at most, about (bytes of message text,
 * and of whole entries by their size): a
 * bigger backlog goes out in several events, one per turn of the event
 * loop, so no single callback holds the loop for long. The texts reach JS
 * as strings, not JSON to parse, so a full event costs about a copy; and
 * strings this big are born where V8's young-generation collections do
 * not copy them again (a UI keeps them).
 */
const CHANGE_TEXT_BYTES = 256 * 1024;
/** flush() emits this many events at most (16 MiB): the rest on the next turns. */
const FLUSH_MAX_EVENTS = 64;

/**
 * The state from the core's snapshot parts: a head (the scalar fields,
 * with `$parts`: how many parts of entries, tool calls and compactions
 * follow), then the session-wide fields one JSON value each, then JSON
 * arrays of entries and of `[id, fields]` pairs. Parts, not one JSON text:
 * V8 caps a string at ~512 MiB, and escaping can make a view's text 6×
 * longer in JSON than the bytes its limits count. The message texts come
 * apart, never escaped (`texts`): an entry's `$texts` lists `[block,
 * pieces]`, each block's text the next `pieces` texts joined
 * (crates/acp-core/src/view/json.rs, `snapshot_apart`).
 */
function joinSnapshot(parts, texts) {
  const head = JSON.parse(parts[0]);
  const [plan, modes, config, commands, info, usage, pending] = parts.slice(1, 8).map((p) => JSON.parse(p));
  let k = 8;
  const entries = [];
  let t = 0;
  for (let i = 0; i < head.$parts[0]; i++) {
    for (const entry of JSON.parse(parts[k++])) {
      if (entry.$texts !== undefined) {
        for (const [block, pieces] of entry.$texts) {
          let text = '';
          for (let j = 0; j < pieces; j++) text += texts[t++];
          entry.content[block].text = text;
        }
        delete entry.$texts;
      }
      entries.push(entry);
    }
  }
  const keyed = (n) => {
    /** @type {Record<string, any>} */
    const byId = {};
    for (let i = 0; i < n; i++) for (const [id, fields] of JSON.parse(parts[k++])) setKey(byId, id, fields);
    return byId;
  };
  const toolCalls = keyed(head.$parts[1]);
  const compactions = keyed(head.$parts[2]);
  const { sessionId, droppedEntries, stopReason, running, droppedKeys } = head;
  // The order of the whole snapshot (and of the reference fold's toJSON).
  const state = {
    sessionId,
    entries,
    droppedEntries,
    toolCalls,
    compactions,
    plan,
    modes,
    config,
    commands,
    info,
    usage,
    stopReason,
    running,
    pending,
    droppedKeys,
  };
  setSeq(state, head.$seq);
  return state;
}

/**
 * A change description from the core's drain parts: its JSON, then the
 * texts it carries, apart (no JSON to parse): appended texts in order,
 * then the last block of each new entry listed in `$cut`, then the long
 * strings of tool calls and blocks, each at its path in `$apart` (keys
 * and indices from the description's root;
 * crates/acp-core/src/view/apart.rs).
 */
function changesOf(parts) {
  const changes = JSON.parse(parts[0]);
  let k = 1;
  if (changes.appended !== undefined) for (const a of changes.appended) a.text = parts[k++];
  if (changes.$cut !== undefined) {
    for (const j of changes.$cut) {
      const content = changes.newEntries[j].content;
      content[content.length - 1].text = parts[k++];
    }
    delete changes.$cut;
  }
  if (changes.$apart !== undefined) {
    for (const path of changes.$apart) {
      let at = changes;
      for (let i = 0; i < path.length - 1; i++) at = at[path[i]];
      at[path[path.length - 1]] = parts[k++];
    }
    delete changes.$apart;
  }
  return changes;
}

/** @extends {EventEmitter<import('../types/session-view').SessionViewEvents>} */
class SessionView extends EventEmitter {
  #port; // { native(): the current native connection }
  #id;
  #options;
  #given; // the options as opened (client.session() compares a second call's)
  #intervalMs;
  /** @type {NodeJS.Timeout | null} */
  #timer = null;
  #queued = false;
  #lastEmit = 0;
  #closed = false;
  /** @type {{ immediate?: NodeJS.Immediate, timeout?: NodeJS.Timeout } | null} */
  #more = null; // the timer or immediate that drains again soon
  #outbox = []; // changes taken, emitted from #next on
  #next = 0;
  #emitting = false;
  #byStore; // opened by the session store (it forwards; the host's choice wins)

  /** @internal Use `client.session()`; `byStore`: the session store opens it. */
  constructor(port, sessionId, options = {}, byStore = false) {
    super();
    this.#byStore = byStore;
    // Checked by client.session().
    const intervalMs = options.intervalMs ?? DEFAULT_INTERVAL_MS;
    this.#port = port;
    this.sessionId = sessionId;
    this.#intervalMs = intervalMs;
    this.#options = {
      limits: Object.fromEntries(LIMIT_NAMES.map((k) => [k, options[k]])),
      forward: options.forward === true,
    };
    this.#given = options;
    this.#open(options.setup);
  }

  /**
   * @internal The first option of `options` (given again to
   * `client.session()`) that differs from what this view was opened with,
   * or undefined. An option left out does not differ.
   */
  conflictingOption(options = {}) {
    const was = this.#given;
    const same = {
      intervalMs: (v) => v === (was.intervalMs ?? DEFAULT_INTERVAL_MS),
      forward: (v) => v === (was.forward ?? false),
      setup: (v) => JSON.stringify(v) === JSON.stringify(was.setup),
    };
    for (const [key, value] of Object.entries(options)) {
      if (value === undefined) continue;
      const ok = same[key] ?? ((v) => v === was[key]);
      if (!ok(value)) return key;
    }
    return undefined;
  }

  /** @internal Opened by the session store, not by the host. */
  get openedByStore() {
    return this.#byStore;
  }

  /** @internal The view's id in the core (a restart gives a new one). */
  get id() {
    return this.#id;
  }

  /** @internal (Re)open on the current native connection. */
  #open(setup) {
    const native = this.#port.native();
    this.#id = native.openView(this.sessionId, this.#options.limits, this.#options.forward);
    if (setup !== undefined) native.seedView(this.#id, JSON.stringify(setup));
  }

  /** @internal Deliver the session's updates one by one too, or not. */
  setForward(forward) {
    if (this.#closed || this.#options.forward === forward) return;
    this.#options.forward = forward;
    this.#port.native().openView(this.sessionId, this.#options.limits, forward);
  }

  /** @internal The agent process was restarted: start over on the new one. */
  reopen() {
    if (this.#closed) return;
    this.#open();
    emitIsolated(this, 'reset', [], (err) => this.#port.report(err, 'session view reset'));
  }

  /**
   * The whole current state (a fresh copy each call), with its `seq`.
   * Changes taken with it (in one hold of the core's state) are emitted
   * after this returns, never during: a listener attached before or after
   * gets them once its copy exists, and `applyChanges` skips them (their
   * `seq` is at most the snapshot's).
   */
  snapshot() {
    const all = this.#port.native().viewSnapshot(this.#id, CHANGE_TEXT_BYTES);
    if (all === null || all === undefined) throw new Error(`session view of ${this.sessionId} is closed`);
    const texts = all.pop();
    const parts = all.pop();
    if (all.length > 0) {
      this.#unschedule();
      this.#lastEmit = Date.now();
      for (const drained of all) {
        const changes = changesOf(drained);
        delete changes.$more;
        this.#outbox.push(changes);
      }
      queueMicrotask(() => this.#pump());
    }
    return joinSnapshot(parts, texts);
  }

  /**
   * The current state and a listener of what follows, attached at once:
   * `listener` gets exactly the changes the returned state does not hold
   * (none of those taken with it), so `applyChanges(state, changes)` in it
   * keeps the copy exact. `unsubscribe()` detaches it.
   */
  subscribe(listener) {
    if (typeof listener !== 'function') throw invalidArgument('listener', 'must be a function');
    const state = this.snapshot();
    const from = state.seq;
    // A restart numbers events from 1 again (after a `reset`): from then on
    // every event is new to the copy the host starts over.
    let seqOf = from;
    const own = (changes) => {
      if (typeof changes.seq === 'number' && changes.seq <= seqOf) return;
      listener(changes);
    };
    const onReset = () => {
      seqOf = 0;
    };
    this.on('change', own);
    this.on('reset', onReset);
    return {
      state,
      unsubscribe: () => {
        this.off('change', own);
        this.off('reset', onReset);
      },
    };
  }

  /**
   * Resolves once every change the view holds has been emitted (several
   * events for a big backlog, one per turn of the event loop, so other
   * work runs between). Changes the agent sends meanwhile are included:
   * call it once the output you wait for has arrived (e.g. after
   * `prompt()` resolves: the view already holds every update sent before
   * the response). Resolves at once on a closed view.
   */
  settled() {
    return new Promise((/** @type {(value?: void) => void} */ resolve) => {
      const step = () => {
        if (this.#closed) return resolve();
        if (this.#emitOne(true) === null && this.#next >= this.#outbox.length) return resolve();
        setImmediate(step);
      };
      step();
    });
  }

  toJSON() {
    return this.snapshot();
  }

  /** The transcript as Markdown. */
  toMarkdown() {
    return toMarkdown(this.snapshot());
  }

  /**
   * @internal Fold a stored view (from the session store) in after what
   * this view holds, skipping entries it already has; `interrupted`: why
   * the stored last turn was cut (a notice entry says so). Returns how
   * many entries were restored.
   */
  restore(stored, interrupted) {
    if (this.#closed || stored === null || stored === undefined) return 0;
    const n = this.#port.native().restoreView(this.#id, JSON.stringify(stored), interrupted ?? null);
    this.changed();
    return n ?? 0;
  }

  /** @internal The core says the view changed: emit within `intervalMs`. */
  changed() {
    if (this.#closed) return;
    if (this.#intervalMs === 0) {
      if (!this.#queued) {
        this.#queued = true;
        // After the rest of the batch: one drain per batch.
        queueMicrotask(() => {
          this.#queued = false;
          this.#emitOne(false);
        });
      }
      return;
    }
    if (this.#timer) return;
    const wait = Math.max(0, this.#lastEmit + this.#intervalMs - Date.now());
    this.#timer = setTimeout(() => {
      this.#timer = null;
      this.#emitOne(false);
    }, wait);
    this.#timer.unref?.();
  }

  /**
   * Emit the pending changes now (if any), as several events when there
   * are more than `CHANGE_TEXT_BYTES`, all before this returns; at most
   * `FLUSH_MAX_EVENTS` of them: a bigger backlog's rest follows on the
   * next turns. Returns the last change description emitted, or null.
   */
  flush() {
    // Changes a snapshot() took wait for their microtask: out first.
    this.#pump();
    let last = null;
    for (let n = 0; n < FLUSH_MAX_EVENTS; n++) {
      const changes = this.#emitOne(true);
      if (changes === null) return last;
      last = changes;
      // The backlog as it was is out; what the agent sends meanwhile
      // follows at display rate (an agent that floods faster than JS
      // drains would otherwise keep this loop, and the event loop, going).
      if (!this.#more) return last;
    }
    return last;
  }

  /**
   * Drain and emit one change event (at most CHANGE_TEXT_BYTES of text).
   * Unless `wait`, a core busy folding is not waited for: try again soon.
   */
  #emitOne(wait) {
    if (this.#closed) return null;
    this.#unschedule();
    const parts = this.#port.native().drainView(this.#id, CHANGE_TEXT_BYTES, wait);
    if (parts === null || parts === undefined) return null;
    if (parts.length === 0) {
      // The reader holds the views (maybe paused by the OS): do not wait.
      this.#drainSoon(1);
      return null;
    }
    this.#lastEmit = Date.now();
    const changes = changesOf(parts);
    if (changes.$more !== undefined) {
      delete changes.$more;
      // The rest of the backlog on the next turn: other work runs between.
      this.#drainSoon(0);
    }
    this.#emit(changes);
    return changes;
  }

  /**
   * Emit `changes` to the listeners, in drain order: one taken while a
   * listener runs (a listener calling snapshot() or flush()) waits until
   * every listener has had the one before it.
   */
  #emit(changes) {
    this.#outbox.push(changes);
    this.#pump();
  }

  /** Emit what waits in the outbox, in order (unless already emitting). */
  #pump() {
    if (this.#emitting) return;
    this.#emitting = true;
    try {
      // By index, not shift(): a snapshot of a long backlog queues
      // thousands. Pushed meanwhile: reached by the same loop; close()
      // empties the box: the loop ends.
      while (this.#next < this.#outbox.length) {
        const next = this.#outbox[this.#next++];
        emitIsolated(this, 'change', [next], (err) => this.#port.report(err, 'session view change'));
      }
    } finally {
      this.#outbox.length = 0;
      this.#next = 0;
      this.#emitting = false;
    }
  }

  /** Drain again on the next turn of the loop (`ms` 0) or in `ms`. */
  #drainSoon(ms) {
    this.#cancelMore();
    const again = () => {
      this.#more = null;
      this.#emitOne(false);
    };
    // The next turn's drain is kept ref'd: an unref'd immediate does not
    // stop the loop from sleeping, so it ran only when something else
    // woke the loop (a flush's backlog waited for the next agent message,
    // and a flood woke the loop once per drain). It runs on the next
    // turn, and the chain ends with the backlog.
    this.#more = ms === 0 ? { immediate: setImmediate(again) } : { timeout: setTimeout(again, ms) };
    this.#more.timeout?.unref?.();
  }

  /** Drop the scheduled emit and drain-again: one is happening now. */
  #unschedule() {
    if (this.#timer) {
      clearTimeout(this.#timer);
      this.#timer = null;
    }
    this.#cancelMore();
  }

  #cancelMore() {
    if (this.#more === null) return;
    if (this.#more.immediate) clearImmediate(this.#more.immediate);
    else clearTimeout(this.#more.timeout);
    this.#more = null;
  }

  /** Stop folding: the session's updates are delivered one by one again. */
  close() {
    if (this.#closed) return;
    this.#closed = true;
    // Changes taken but not yet emitted (a listener closed the view) go too.
    this.#outbox.length = 0;
    this.#next = 0;
    this.#unschedule();
    this.#port.native().closeView(this.#id);
    this.#port.closed(this);
  }

  get closed() {
    return this.#closed;
  }

  /** Changes wait to be emitted (a timer, a queued emit, or a backlog's rest). */
  get pending() {
    return (
      !this.#closed && (this.#timer !== null || this.#queued || this.#more !== null || this.#next < this.#outbox.length)
    );
  }
}

module.exports = { SessionView, CHANGE_TEXT_BYTES };
