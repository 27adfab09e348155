'use strict';

// SessionStore: sessions that survive the host and the agent, kept in one
// SQLite file in a directory the host chooses (crates/acp-core/src/store).
// Writes go to the store's writer thread; queries run off the JS thread.
// See docs/sessions-store.md.

const path = require('node:path');
const { randomBytes } = require('node:crypto');
const { native } = require('./loader.js');
const check = require('./validate.js');
const { AcpError, invalidArgument } = require('./errors.js');

/** The store's own calls, for the client that records into it. */
const RECORDER = Symbol('acp-native.store.recorder');

const EXPORT_FORMAT = 'acp-native-session';
const EXPORT_VERSION = 1;

/** A stored session's id: ours, kept across agent sessions. */
function newStoredId() {
  return `s_${randomBytes(16).toString('hex')}`;
}

/** `{"ok": v}` or `{"error": {code, message}}` from the binding → v, or a typed throw. */
function settle(text) {
  const r = JSON.parse(text);
  if (r.error) throw new AcpError(r.error.code, r.error.message);
  return r.ok;
}

function storeError(err) {
  if (typeof err?.code === 'string' && err.code.startsWith('ERR_ACP_')) return new AcpError(err.code, err.message);
  return err;
}

class SessionStore {
  #native;
  #closed = false;

  /** @internal Use `SessionStore.open()`. */
  constructor(handle) {
    this.#native = handle;
  }

  /**
   * Open (creating if need be) the store in `dir`. Rejects with
   * ERR_ACP_STORE_CORRUPT / _FOREIGN / _NEWER for a file that is not a
   * store this version can use (the file is left as it is).
   */
  static async open(dir, options = {}) {
    check.string('dir', dir);
    check.optionalObject('options', options);
    const o = options ?? {};
    for (const k of ['maxSessions', 'maxBytes', 'maxAgeMs', 'intervalMs']) {
      if (o[k] !== undefined && (typeof o[k] !== 'number' || Number.isNaN(o[k])))
        throw invalidArgument(`options.${k}`, 'must be a number');
    }
    const r = await native.openStore(path.resolve(dir), {
      maxSessions: o.maxSessions,
      maxBytes: o.maxBytes,
      maxAgeMs: o.maxAgeMs,
      intervalMs: o.intervalMs,
    });
    if (typeof r === 'string') settle(r);
    return new SessionStore(r);
  }

  /** The store file. */
  get path() {
    return this.#native.path;
  }

  #live() {
    if (this.#closed) throw new AcpError('ERR_ACP_STORE_CLOSED', 'the session store is closed');
    return this.#native;
  }

  /**
   * A read sees what this process recorded before it: what the writer has
   * not committed yet is committed first. A batch that failed does not
   * fail the read (it is retried; `flush()` reports it).
   */
  async #caughtUp() {
    await this.#live().flush();
  }

  /** Stored sessions, most recently updated first (no views). */
  async list(options = {}) {
    check.optionalObject('options', options);
    const limit = check.size('options.limit', options?.limit ?? 100, 0);
    const offset = check.size('options.offset', options?.offset ?? 0, 0);
    await this.#caughtUp();
    return settle(await this.#live().list(limit, offset));
  }

  /** Sessions whose title, prompts or messages hold every word of `text`, best first, each with a `snippet`. */
  async search(text, options = {}) {
    check.string('text', text);
    check.optionalObject('options', options);
    const limit = check.size('options.limit', options?.limit ?? 20, 0);
    await this.#caughtUp();
    return settle(await this.#live().search(text, limit));
  }

  /** One stored session with its view (rejects ERR_ACP_STORE_NOT_FOUND). */
  async get(id) {
    check.string('id', id);
    await this.#caughtUp();
    return settle(await this.#live().get(id, false));
  }

  /**
   * One stored session with its view and journal, as a self-describing object (JSON-safe).
   * @returns {Promise<import('../types/session-store').SessionExport>}
   */
  async export(id) {
    check.string('id', id);
    await this.#caughtUp();
    const session = settle(await this.#live().get(id, true));
    return { format: EXPORT_FORMAT, version: EXPORT_VERSION, exportedAt: new Date().toISOString(), session };
  }

  /** Delete a stored session (its view, journal and search text); resolves once committed. */
  async delete(id) {
    check.string('id', id);
    try {
      this.#live().delete(id);
    } catch (err) {
      throw storeError(err);
    }
    await this.flush();
  }

  /** Resolves once everything recorded so far is committed (rejects with the batch's typed error). */
  async flush() {
    settle(await this.#live().flush());
  }

  /** The writer's counters: batches, viewsWritten, coalesced, dropped, errors, pruned, lastError. */
  stats() {
    return JSON.parse(this.#native.stats());
  }

  /** Write what is left and close. Idempotent. */
  async close() {
    if (this.#closed) return;
    this.#closed = true;
    settle(await this.#native.close());
  }

  /**
   * Respawn a stored session's agent and continue the session: see
   * `AcpClient#recover`. `options` are AcpClient options (default: the
   * stored command and args); resolves to `{client, ...recovery}`.
   */
  async resume(id, options = {}) {
    check.string('id', id);
    const stored = await this.get(id);
    const { AcpClient } = require('./client.js');
    const agent = stored.agent ?? {};
    const clientOptions = {
      command: agent.command,
      args: agent.args ?? [],
      cwd: stored.cwd ?? undefined,
      ...options,
      store: this,
    };
    if (typeof clientOptions.command !== 'string')
      throw invalidArgument('options.command', 'is needed: the stored session does not say how its agent was started');
    const client = await AcpClient.connect(clientOptions);
    try {
      const recovery = await client.recover(id);
      return { client, ...recovery };
    } catch (err) {
      client.kill();
      throw err;
    }
  }

  /** @internal What the client records with. */
  get [RECORDER]() {
    const n = () => this.#live();
    const wrap = (f) => {
      try {
        return f();
      } catch (err) {
        throw storeError(err);
      }
    };
    return {
      create: (session) => wrap(() => n().create(JSON.stringify(session))),
      patch: (id, patch) => wrap(() => n().patch(id, JSON.stringify(patch))),
      journal: (id, kind, data) => wrap(() => n().journal(id, kind, JSON.stringify(data))),
      recordView: (id, conn, viewId) => wrap(() => n().recordView(id, conn, viewId)),
      stopView: (id) => wrap(() => n().stopView(id)),
      closed: () => this.#closed,
    };
  }
}

module.exports = { SessionStore, RECORDER, newStoredId, EXPORT_FORMAT };
