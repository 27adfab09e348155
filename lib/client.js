'use strict';

// AcpClient: the ACP methods over the generic connection (connection.js).
// What is ACP-specific lives here: initialize and its capabilities, the
// session methods and their bookkeeping, prompt/cancel, session updates.

const { native } = require('./loader.js');
const check = require('./validate.js');
const { ConnectionBase, INTERNAL, AGENT_STATUS, RESTARTED, VIEW_CHANGED, rejecting } = require('./connection.js');
const { SessionView } = require('./session-view.js');
const { LIMIT_NAMES } = require('./session-fold.js');
const { invalidArgument } = require('./errors.js');
const { UpdateStream, SESSION_ENDED } = require('./updates.js');
const { resolveAgentOptions } = require('./agents/connect.js');
const { RECORDER, newStoredId } = require('./store.js');
const { sameFullResult } = require('./results.js');

const PACKAGE_VERSION = require('../package.json').version;

function toPromptBlocks(prompt) {
  if (typeof prompt === 'string') return [{ type: 'text', text: prompt }];
  if (!Array.isArray(prompt)) throw invalidArgument('params.prompt', 'must be a string or an array of content blocks');
  return prompt;
}

/** `{cwd, mcpServers}` defaults of the session-opening methods; cwd must be absolute. */
function sessionParams(params, needsId) {
  const p = check.optionalObject('params', params) ?? {};
  if (needsId) check.string('params.sessionId', p.sessionId);
  const cwd = p.cwd ?? process.cwd();
  check.absolutePath('params.cwd', cwd);
  return { ...p, cwd, mcpServers: p.mcpServers ?? [] };
}

/** `params.sessionId` of a session method's params object. */
function sessionIdIn(params) {
  check.object('params', params);
  return check.string('params.sessionId', params.sessionId);
}

/** The session id of `cancel(sessionId)` or `cancel({sessionId})`. */
function sessionIdOf(arg) {
  return typeof arg === 'string' ? check.string('sessionId', arg) : sessionIdIn(arg);
}

/**
 * A connection to one ACP agent process. See index.d.ts for the API docs.
 */
class AcpClient extends ConnectionBase {
  /** @type {import('../index').InitializeResponse | null} */
  #agent = null; // the initialize result of the current process
  #views = new Map(); // sessionId → SessionView (lib/session-view.js)
  #recorded = new Map(); // sessionId → stored id, sessions recorded in options.store
  #titled = new Set(); // stored ids given a title by their first prompt
  #recording = false; // recover() records the session itself
  #watchingExit = false;

  /** Spawn the agent and run `initialize`; resolves to the ready client. */
  static connect(options, initializeParams) {
    return rejecting(async () => {
      // `{agent: 'id', agents}`: a registry id, installed and resolved first.
      const client = new AcpClient(options?.agent !== undefined ? await resolveAgentOptions(options) : options);
      try {
        await client.initialize(initializeParams);
      } catch (err) {
        client.kill();
        throw err;
      }
      return client;
    });
  }

  /** The `initialize` result, once known. */
  get agent() {
    return this.#agent;
  }

  [AGENT_STATUS]() {
    const agent = this.#agent;
    return {
      protocolVersion: agent?.protocolVersion ?? null,
      agentInfo: agent?.agentInfo ?? null,
      agentCapabilities: agent?.agentCapabilities ?? null,
    };
  }

  [RESTARTED]() {
    this.#agent = null;
    // The old process's views are copied one last time; recover() records
    // each session again on the new process.
    for (const [sessionId, storedId] of this.#recorded) this.#stopRecording(sessionId, storedId, 'interrupted');
    for (const view of this.#views.values()) view.reopen();
  }

  // ---- the session store (options.store) ---------------------------------

  get #recorder() {
    const store = this[INTERNAL].options.store;
    return store && !store[RECORDER].closed() ? store[RECORDER] : null;
  }

  /** The stored ids of the sessions this client records, by session id. */
  recordedSessions() {
    return Object.fromEntries(this.#recorded);
  }

  /**
   * Record `sessionId` under `storedId` (new unless given): its view, from
   * now on. `setup`: what session/new answered, which seeds the view as a
   * host's `session(id, { setup })` would (so the host can open it so too).
   */
  #record(sessionId, cwd, storedId, forkedFrom, setup) {
    const rec = this.#recorder;
    if (!rec || typeof sessionId !== 'string') return null;
    const agent = this.#agent;
    const { options } = this[INTERNAL];
    const agentJson = {
      command: options.command,
      args: options.args ?? [],
      name: agent?.agentInfo?.name ?? null,
      version: agent?.agentInfo?.version ?? null,
    };
    try {
      if (storedId === undefined) {
        storedId = newStoredId();
        rec.create({
          id: storedId,
          agent: agentJson,
          agentSessionId: sessionId,
          cwd,
          capabilities: agent?.agentCapabilities ?? null,
          forkedFrom,
        });
      } else {
        rec.patch(storedId, {
          agent: agentJson,
          agentSessionId: sessionId,
          capabilities: agent?.agentCapabilities ?? null,
          state: 'open',
        });
      }
      const view = this.#view(sessionId, setup ? { forward: true, setup } : { forward: true }, true);
      rec.recordView(storedId, this[INTERNAL].conn(), view.id);
      this.#recorded.set(sessionId, storedId);
      if (!this.#watchingExit) {
        this.#watchingExit = true;
        // The last copy of each view; a turn cut by a crash stays marked.
        this.on('exit', (info) => {
          const state = info?.reason === 'closed' || info?.reason === 'killed' ? 'closed' : 'interrupted';
          for (const [sid, stored] of this.#recorded) this.#stopRecording(sid, stored, state);
        });
      }
      return storedId;
    } catch (err) {
      this[INTERNAL].report(err, 'session store');
      return null;
    }
  }

  #journal(sessionId, kind, data) {
    const storedId = this.#recorded.get(sessionId);
    const rec = this.#recorder;
    if (storedId === undefined || !rec) return;
    try {
      rec.journal(storedId, kind, data);
    } catch (err) {
      this[INTERNAL].report(err, 'session store');
    }
  }

  #stopRecording(sessionId, storedId, state) {
    this.#recorded.delete(sessionId);
    const rec = this.#recorder;
    if (!rec) return;
    try {
      rec.stopView(storedId);
      rec.patch(storedId, { state });
    } catch (err) {
      this[INTERNAL].report(err, 'session store');
    }
  }

  /**
   * Continue a stored session on this (initialized) client's agent:
   * `session/resume` if the agent has it, else `session/load` (its replay
   * de-duplicated against the stored view), else a new session whose view
   * is seeded from the store (`how: 'fresh'`: the agent does not know the
   * history). Emits `recovering`, then `recovered` or `recoveryFailed`.
   */
  recover(storedId) {
    return rejecting(async () => {
      check.string('storedId', storedId);
      const store = this[INTERNAL].options.store;
      if (!store) throw invalidArgument('options.store', 'is needed to recover a stored session');
      // Listeners isolated: one that throws is reported, and neither the
      // other listeners nor the recovery lose the event.
      const { emit } = this[INTERNAL];
      emit('recovering', { storedId });
      let result;
      try {
        result = await this.#recover(store, storedId);
      } catch (error) {
        emit('recoveryFailed', { storedId, error });
        throw error;
      }
      emit('recovered', result);
      return result;
    });
  }

  /**
   * The agent's sessions (`session/list`, when it has it) and the stored
   * ones, merged: one entry per session, saying where it is (`native`,
   * `stored`, or both).
   */
  sessions(params = {}) {
    return rejecting(async () => {
      check.optionalObject('params', params);
      const store = this[INTERNAL].options.store;
      const caps = this.#agent?.agentCapabilities ?? {};
      const byId = new Map();
      if (caps.sessionCapabilities?.list) {
        const listed = await this.listSessions(params.cwd === undefined ? {} : { cwd: params.cwd });
        // A list over maxResultBytes is a marker: the store's sessions still come.
        for (const s of Array.isArray(listed?.sessions) ? listed.sessions : []) {
          if (typeof s?.sessionId !== 'string') continue;
          byId.set(s.sessionId, {
            sessionId: s.sessionId,
            storedId: null,
            native: true,
            stored: false,
            title: s.title ?? null,
            cwd: s.cwd ?? null,
            updatedAt: s.updatedAt ?? null,
          });
        }
      }
      const out = [...byId.values()];
      if (store) {
        for (const s of await store.list({ limit: params.limit ?? 100 })) {
          if (params.cwd !== undefined && s.cwd !== params.cwd) continue;
          const native = s.agentSessionId !== null ? byId.get(s.agentSessionId) : undefined;
          const entry = {
            sessionId: s.agentSessionId,
            storedId: s.id,
            native: false,
            stored: true,
            title: s.title,
            cwd: s.cwd,
            updatedAt: new Date(s.updatedAt).toISOString(),
            state: s.state,
            agent: s.agent,
          };
          if (native) Object.assign(native, { ...entry, native: true, title: native.title ?? s.title });
          else out.push(entry);
        }
      }
      return out;
    });
  }

  /**
   * Fork a session: `session/fork` when the agent has it, else emulated
   * from the store (a new agent session whose view is the stored one;
   * `emulated: true`: the agent does not know the history).
   */
  forkSession(params) {
    return rejecting(async () => {
      const sessionId = sessionIdIn(params);
      const caps = this.#agent?.agentCapabilities ?? {};
      const storedFrom = this.#recorded.get(sessionId) ?? params.storedId;
      const cwd = params.cwd ?? process.cwd();
      // session/fork is unstable ACP: not in the (stable) typed capabilities.
      const sessionCaps = /** @type {{ fork?: object | null } | null | undefined} */ (caps.sessionCapabilities);
      if (sessionCaps?.fork) {
        this.#recording = true;
        const result = await this.request('session/fork', {
          sessionId,
          cwd,
          mcpServers: params.mcpServers ?? [],
        }).finally(() => {
          this.#recording = false;
        });
        if (typeof result?.sessionId !== 'string') return sameFullResult(result, { ...result, emulated: false });
        this[INTERNAL].status.sessions.add(result.sessionId);
        // The fork's view starts where the original's is (the agent does not replay it).
        const store = this[INTERNAL].options.store;
        if (store && storedFrom !== undefined) {
          await store.flush();
          this.#view(result.sessionId, { forward: true }, true).restore((await store.get(storedFrom)).view);
        }
        const storedId = this.#record(result.sessionId, cwd, undefined, storedFrom);
        return sameFullResult(result, { ...result, storedId, emulated: false });
      }
      const store = this[INTERNAL].options.store;
      if (!store || storedFrom === undefined) {
        throw invalidArgument(
          'params.sessionId',
          'names a session the agent cannot fork (no session/fork) and the store does not hold',
        );
      }
      await store.flush();
      const stored = await store.get(storedFrom);
      this.#recording = true;
      const created = await this.newSession({ cwd: stored.cwd ?? cwd }).finally(() => {
        this.#recording = false;
      });
      const view = this.#view(created.sessionId, { forward: true }, true);
      view.restore(stored.view);
      const storedId = this.#record(created.sessionId, stored.cwd ?? cwd, undefined, storedFrom);
      return { sessionId: created.sessionId, storedId, emulated: true };
    });
  }

  async #recover(store, storedId) {
    const stored = await store.get(storedId);
    const caps = this.#agent?.agentCapabilities ?? {};
    const cwd = stored.cwd ?? process.cwd();
    const old = stored.agentSessionId;
    const interrupted = stored.view?.running === true || stored.state === 'interrupted';
    let how = null;
    let sessionId = old;
    let fallback;
    if (typeof old === 'string' && caps.sessionCapabilities?.resume) {
      this.#view(old, { forward: true }, true);
      try {
        await this.resumeSession({ sessionId: old, cwd });
        how = 'resume';
      } catch (err) {
        fallback = err;
      }
    }
    if (how === null && typeof old === 'string' && caps.loadSession === true) {
      // Open first: the replay folds into the view.
      this.#view(old, { forward: true }, true);
      try {
        await this.loadSession({ sessionId: old, cwd });
        how = 'load';
      } catch (err) {
        fallback = err;
      }
    }
    if (how === null) {
      this.#views.get(old)?.close();
      this.#recording = true;
      const created = await this.newSession({ cwd }).finally(() => {
        this.#recording = false;
      });
      sessionId = created.sessionId;
      how = 'fresh';
      this.#view(sessionId, { forward: true }, true);
    }
    const view = this.#view(sessionId, { forward: true }, true);
    const restored = view.restore(
      stored.view,
      interrupted ? 'The agent or the host stopped during this turn.' : undefined,
    );
    this.#record(sessionId, cwd, storedId);
    const reason = fallback ? `${fallback.code ?? 'Error'}: ${fallback.message}` : undefined;
    this.#journal(sessionId, 'recovered', { how, agentSessionId: sessionId, restored, reason });
    return { storedId, sessionId, how, restored, interrupted, reason, view };
  }

  [VIEW_CHANGED](id) {
    for (const view of this.#views.values()) if (view.id === id) view.changed();
  }

  /**
   * A live view of a session, folded in the core (see lib/session-view.js);
   * the same view for the same session until it is closed. Called again
   * while it is open: the same view, unless an option given differs from
   * the open view's (ERR_ACP_INVALID_ARGUMENT naming it: close it first).
   */
  session(sessionId, opts) {
    check.string('sessionId', sessionId);
    check.optionalObject('options', opts);
    check.timerMs('options.intervalMs', opts?.intervalMs);
    for (const limit of LIMIT_NAMES) check.size(`options.${limit}`, opts?.[limit]);
    return this.#view(sessionId, opts, false);
  }

  /** The session's view; `byStore`: the store's own (it forwards, and never conflicts). */
  #view(sessionId, opts, byStore) {
    let view = this.#views.get(sessionId);
    if (!view || view.closed) {
      const { conn, report } = this[INTERNAL];
      const port = {
        native: conn,
        report,
        closed: (v) => this.#views.get(sessionId) === v && this.#views.delete(sessionId),
      };
      view = new SessionView(port, sessionId, opts, byStore);
      this.#views.set(sessionId, view);
      return view;
    }
    if (byStore) return view;
    // A view the store opened forwards; the host's explicit choice wins.
    const { forward, ...rest } = opts ?? {};
    const fromStore = view.openedByStore;
    const conflict = view.conflictingOption(fromStore ? rest : opts);
    if (conflict !== undefined) {
      throw invalidArgument(
        `options.${conflict}`,
        `differs from the open view of ${sessionId}'s${typeof opts[conflict] === 'object' ? '' : ` (${opts[conflict]})`}: close() that view to open one with other options`,
      );
    }
    if (fromStore && typeof forward === 'boolean') view.setForward(forward);
    return view;
  }

  onSessionUpdate(handler) {
    return this.onNotification('session/update', handler);
  }

  /**
   * The `session/update`s of one session as an async iterator. Updates
   * wait in a small buffer; while it is full the next batches wait too,
   * so the pace of consumption is the pace of reading from the agent.
   * Ends when `signal` aborts, `closeSession`/`deleteSession` of it succeeds, or the agent exits (after what already
   * arrived), or at once on `return()` (e.g. `break`).
   */
  updates(sessionId, opts = {}) {
    check.string('sessionId', sessionId);
    check.optionalObject('options', opts);
    const signal = check.signal('options.signal', opts.signal);
    const highWaterMark = check.size('options.highWaterMark', opts.highWaterMark, 1);
    return new UpdateStream(this, sessionId, signal, highWaterMark);
  }

  // ---- client → agent ---------------------------------------------------

  initialize(params, options) {
    return rejecting(() => {
      const p = check.optionalObject('params', params) ?? {};
      const { status, handlers, conn, options: clientOptions } = this[INTERNAL];
      const theirs = native.protocolVersion();
      if (p.protocolVersion !== undefined && p.protocolVersion !== theirs) {
        throw invalidArgument('params.protocolVersion', `must be ${theirs} (the version this client speaks) or absent`);
      }
      const served = [...handlers.requestMethods(), ...conn().builtinMethods()];
      const derived = JSON.parse(native.clientCapabilities(served));
      const given = p.clientCapabilities ?? {};
      const clientCapabilities = { ...derived, ...given, fs: { ...derived.fs, ...given.fs } };
      const request = {
        ...p,
        protocolVersion: theirs,
        clientCapabilities,
        clientInfo: p.clientInfo ?? clientOptions.clientInfo ?? { name: 'acp-native', version: PACKAGE_VERSION },
      };
      const callOptions = check.callOptions(options);
      const timeoutMs = callOptions.timeoutMs ?? clientOptions.initializeTimeoutMs;
      const json = check.json('params', request);
      status.initializing();
      return this[INTERNAL].call('initialize', json, timeoutMs, callOptions.signal, {
        result: (result) => {
          this.#agent = result;
          status.initialized();
          return result;
        },
        error: (err) => {
          status.initializeFailed(err);
          // A hung agent is useless: stop it, and report what it said.
          if (err.code === 'ERR_ACP_TIMEOUT') {
            err.stderrTail = conn().stderrTail();
            this.kill();
          }
          const head = this[INTERNAL].stdoutHead();
          if (head.length && (err.code === 'ERR_ACP_TIMEOUT' || err.code === 'ERR_ACP_CLOSED')) {
            err.stdoutHead = head;
            err.message += `\nThe agent printed on stdout (not JSON-RPC: is it started in its ACP mode?):\n${head.map((l) => `  ${l}`).join('\n')}`;
          }
          return err;
        },
      });
    });
  }

  authenticate(params, options) {
    return rejecting(() => this.request('authenticate', check.object('params', params), options));
  }

  logout(params = {}, options) {
    return this.request('logout', params, options);
  }

  newSession(params, options) {
    return rejecting(() =>
      this[INTERNAL].request('session/new', sessionParams(params, false), options, {
        result: (result) => {
          if (typeof result?.sessionId === 'string') this[INTERNAL].status.sessions.add(result.sessionId);
          if (!this.#recording && typeof result?.sessionId === 'string') {
            const { sessionId, ...setup } = result;
            this.#record(sessionId, params?.cwd ?? process.cwd(), undefined, undefined, setup);
          }
          return result;
        },
      }),
    );
  }

  loadSession(params, options) {
    return this.#opening('session/load', params, options);
  }

  resumeSession(params, options) {
    return this.#opening('session/resume', params, options);
  }

  /** Count a loaded/resumed session as open once the agent accepts it. */
  #opening(method, params, options) {
    return rejecting(() => {
      const p = sessionParams(params, true);
      return this[INTERNAL].request(method, p, options, {
        result: (result) => {
          this[INTERNAL].status.sessions.add(p.sessionId);
          return result;
        },
      });
    });
  }

  closeSession(params, options) {
    return this.#ending('session/close', params, options);
  }

  /**
   * Delete a session: `session/delete` when the agent has it (or when no
   * store is in play), and its stored copy when the client has a store.
   */
  deleteSession(params, options) {
    const store = this[INTERNAL].options.store;
    if (!store) return this.#ending('session/delete', params, options);
    return rejecting(async () => {
      const sessionId = sessionIdIn(params);
      const storedId = this.#recorded.get(sessionId) ?? params.storedId;
      let result = null;
      if (this.#agent?.agentCapabilities?.sessionCapabilities?.delete)
        result = await this.#ending('session/delete', params, options);
      else {
        const stored = this.#recorded.get(sessionId);
        if (stored !== undefined) this.#stopRecording(sessionId, stored, 'closed');
        this.emit(SESSION_ENDED, sessionId);
      }
      if (storedId !== undefined) await store.delete(storedId);
      return result;
    });
  }

  #ending(method, params, options) {
    return rejecting(() => {
      const sessionId = sessionIdIn(params);
      return this[INTERNAL].request(method, params, options, {
        result: (result) => {
          this[INTERNAL].status.sessions.delete(sessionId);
          const storedId = this.#recorded.get(sessionId);
          if (storedId !== undefined) this.#stopRecording(sessionId, storedId, 'closed');
          // Its updates() iterators end (no update will come any more).
          this.emit(SESSION_ENDED, sessionId);
          return result;
        },
      });
    });
  }

  listSessions(params = {}, options) {
    return this.request('session/list', params, options);
  }

  setSessionMode(params, options) {
    return rejecting(() => {
      sessionIdIn(params);
      check.string('params.modeId', params.modeId);
      return this.request('session/set_mode', params, options);
    });
  }

  setSessionConfigOption(params, options) {
    return rejecting(() => {
      sessionIdIn(params);
      return this.request('session/set_config_option', params, options);
    });
  }

  /**
   * One turn. A timeout or an abort gives up on it the way `cancel()`
   * does: `$/cancel_request` for the request and `session/cancel` for the
   * turn, so the session takes new prompts again.
   */
  prompt(params, options) {
    return rejecting(() => {
      const sessionId = sessionIdIn(params);
      const p = { ...params, prompt: toPromptBlocks(params.prompt) };
      const { status } = this[INTERNAL];
      const recorded = this.#recorded.has(sessionId);
      if (recorded) this.#recordPrompt(sessionId, p.prompt);
      // Counted before the request: an early failure settles (and ends it) at once.
      status.promptStarted();
      return this[INTERNAL].request('session/prompt', p, options, {
        result: (result) => {
          status.promptEnded();
          if (recorded) this.#journal(sessionId, 'turn_end', { stopReason: result?.stopReason ?? null });
          return result;
        },
        error: (err) => {
          status.promptEnded(err.code === 'ERR_ACP_CLOSED');
          if (recorded) {
            const cut = err.code === 'ERR_ACP_CLOSED';
            this.#journal(sessionId, cut ? 'interrupted' : 'turn_end', {
              error: { code: err.code, message: err.message },
            });
          }
          if (err.code === 'ERR_ACP_TIMEOUT' || err.code === 'ERR_ACP_ABORTED') this.#cancelTurn(sessionId);
          return err;
        },
      });
    });
  }

  /** The prompt in the journal; the first one titles the session. */
  #recordPrompt(sessionId, prompt) {
    this.#journal(sessionId, 'prompt', { prompt });
    const storedId = this.#recorded.get(sessionId);
    if (this.#titled.has(storedId)) return;
    this.#titled.add(storedId);
    const text = prompt
      .map((b) => (typeof b?.text === 'string' ? b.text : ''))
      .join(' ')
      .trim();
    if (text) {
      try {
        this.#recorder?.patch(storedId, { title: text.length > 120 ? `${text.slice(0, 119)}…` : text });
      } catch (err) {
        this[INTERNAL].report(err, 'session store');
      }
    }
  }

  #cancelTurn(sessionId) {
    try {
      this[INTERNAL].conn().cancelSession(sessionId);
    } catch {
      // closing: nothing to cancel any more
    }
  }

  /**
   * Cancel the session's turn: sends `session/cancel` and answers every
   * request of that session the agent still waits on as cancelled.
   * Resolves with how many such requests were answered.
   */
  cancel(params) {
    return rejecting(() => {
      const sessionId = sessionIdOf(params);
      try {
        return Promise.resolve(this[INTERNAL].conn().cancelSession(sessionId));
      } catch (err) {
        throw this[INTERNAL].nativeError(err);
      }
    });
  }
}

module.exports = { AcpClient };
