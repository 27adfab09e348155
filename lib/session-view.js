'use strict';

// A live view of one session: the core folds the session's `session/update`
// stream (crates/acp-core/src/view), this object hands the state to JS at
// display rate. Opened with `client.session(sessionId, options)`.

const { EventEmitter } = require('node:events');
const { toMarkdown } = require('./session-fold.js');

const DEFAULT_INTERVAL_MS = 16;

class SessionView extends EventEmitter {
  #port; // { native(): the current native connection }
  #id;
  #options;
  #intervalMs;
  #timer = null;
  #queued = false;
  #lastEmit = 0;
  #closed = false;

  /** @internal Use `client.session()`. */
  constructor(port, sessionId, options = {}) {
    super();
    const intervalMs = options.intervalMs ?? DEFAULT_INTERVAL_MS;
    if (typeof intervalMs !== 'number' || !(intervalMs >= 0)) throw new TypeError('intervalMs must be a number >= 0');
    this.#port = port;
    this.sessionId = sessionId;
    this.#intervalMs = intervalMs;
    this.#options = {
      limits: {
        maxEntries: options.maxEntries,
        maxTextBytes: options.maxTextBytes,
        maxBlocks: options.maxBlocks,
        maxKeys: options.maxKeys,
      },
      forward: options.forward === true,
    };
    this.#open(options.setup);
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

  /** @internal The agent process was restarted: start over on the new one. */
  reopen() {
    if (this.#closed) return;
    this.#open();
    this.emit('reset');
  }

  /** The whole current state (a fresh copy each call). */
  snapshot() {
    const text = this.#port.native().viewSnapshot(this.#id);
    if (text === null || text === undefined) throw new Error(`session view of ${this.sessionId} is closed`);
    return JSON.parse(text);
  }

  toJSON() {
    return this.snapshot();
  }

  /** The transcript as Markdown. */
  toMarkdown() {
    return toMarkdown(this.snapshot());
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
          this.flush();
        });
      }
      return;
    }
    if (this.#timer) return;
    const wait = Math.max(0, this.#lastEmit + this.#intervalMs - Date.now());
    this.#timer = setTimeout(() => {
      this.#timer = null;
      this.flush();
    }, wait);
    this.#timer.unref?.();
  }

  /**
   * Emit the pending changes now (if any). Returns the change description
   * emitted, or null.
   */
  flush() {
    if (this.#closed) return null;
    if (this.#timer) {
      clearTimeout(this.#timer);
      this.#timer = null;
    }
    const text = this.#port.native().drainView(this.#id);
    if (text === null || text === undefined) return null;
    this.#lastEmit = Date.now();
    const changes = JSON.parse(text);
    try {
      this.emit('change', changes);
    } catch (err) {
      this.#port.report(err, 'session view change');
    }
    return changes;
  }

  /** Stop folding: the session's updates are delivered one by one again. */
  close() {
    if (this.#closed) return;
    this.#closed = true;
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
    this.#port.native().closeView(this.#id);
    this.#port.closed(this);
  }

  get closed() {
    return this.#closed;
  }
}

module.exports = { SessionView, DEFAULT_INTERVAL_MS };
