'use strict';

// The generic half of the client: one agent process at a time (spawn,
// restart, close), JSON-RPC calls in both directions, events and
// observability. The ACP methods are in client.js; this file knows no
// ACP method names.
//
// Who owns what: the core (Rust) owns process and wire truth — pid, exit
// report, stderr tail, counters, history, closing — and this class reads
// it. JS owns promises and handlers: the Dispatcher the pending calls, the
// HandlerRegistry the handlers, the StatusTracker the lifecycle state.

const { emitIsolated } = require('./emit.js');
const { EventEmitter } = require('node:events');
const { writeFileSafely } = require('./safe-write.js');
const { native } = require('./loader.js');
const logging = require('./logging.js');
const exitHook = require('./exit-hook.js');
const check = require('./validate.js');
const options = require('./options.js');
const { StatusTracker } = require('./status.js');
const { HandlerRegistry } = require('./handlers.js');
const { Dispatcher } = require('./dispatch.js');
const { readStdoutHere } = require('./host-stdout.js');
const { RestartPolicy } = require('./restart.js');
const { fromNativeError, abortError } = require('./errors.js');

/** Internal access for client.js (and unit tests): not part of the API. */
const INTERNAL = Symbol('acp-native.internal');
/** Hooks client.js overrides: the agent part of `status()`, and "a restart happened". */
const AGENT_STATUS = Symbol('acp-native.agentStatus');
const RESTARTED = Symbol('acp-native.restarted');
/** Hook client.js overrides: session view `id` changed (lib/session-view.js). */
const VIEW_CHANGED = Symbol('acp-native.viewChanged');
/** Test seam: `options[CONNECTION_FACTORY](nativeOptions, onBatch)` replaces the binding's AgentConnection. */
const CONNECTION_FACTORY = Symbol.for('acp-native.connectionFactory');

/** @type {typeof Symbol.asyncDispose} */
const asyncDispose = Symbol.asyncDispose ?? /** @type {any} */ (Symbol.for('nodejs.asyncDispose'));

/** `err` through a call's error hook, if it has one. */
function settledBy(errorHook, err) {
  return errorHook ? errorHook(err) : err;
}

/** Run `fn`; a synchronous throw becomes a rejection (public calls never throw). */
function rejecting(fn) {
  try {
    return fn();
  } catch (err) {
    return Promise.reject(err);
  }
}

// The first non-JSON stdout lines of an agent process, kept for initialize
// errors: a usage message or a shell prompt says what went wrong.
const NOISE_HEAD_LINES = 5;
const NOISE_LINE_CHARS = 200;

/** Emitted (internal) when close() or kill() begins. */
const CLOSING = Symbol('acp-native.closing');

/** @typedef {import('../binding').AgentConnection} AgentConnection */

class ConnectionBase extends EventEmitter {
  /**
   * The binding's AgentConnection of the current process: undefined only
   * while the constructor's first spawn runs (it throws if that fails).
   * @type {AgentConnection}
   */
  #conn;
  /** @type {ReturnType<typeof readStdoutHere>} */
  #stdout = null; // its stdout when read here (lib/host-stdout.js)
  #options;
  #handlers;
  #dispatcher;
  #restart;
  #status = new StatusTracker((change) => this.#emit('state', change));
  /** @type {import('../index').ExitInfo | null} */
  #exit = null; // of the current process once gone
  #exitAnnounced = true; // the `exit` event of the current process ran (or none is due)
  /** @type {(() => boolean) | null} */
  #untrack = null;
  #stopped = false; // close()/kill() was called: never restart
  #closing = false;
  #userRef = false;
  #refd = false;
  #unrefQueued = false; // an unref after the last call settled waits for the next turn
  #closed; // Promise<ExitInfo>: the client is finished
  #finish;
  #done = false;
  #internal;
  #stdoutNoise = []; // the first non-JSON stdout lines of the current process

  constructor(opts) {
    super();
    this.#options = options.normalize(opts);
    this.#restart = new RestartPolicy(this.#options.restart);
    this.#closed = new Promise((resolve) => (this.#finish = resolve));
    this.#handlers = new HandlerRegistry((method, handled) => this.#conn?.setHostHandler(method, handled));
    this.#dispatcher = new Dispatcher(this.#handlers, {
      report: (err, where) => this.#report(err, where),
      event: (name, payload) => {
        if (name === 'protocolNoise' && this.#stdoutNoise.length < NOISE_HEAD_LINES) {
          this.#stdoutNoise.push(String(payload?.line).slice(0, NOISE_LINE_CHARS));
        }
        this.#emit(name, payload);
      },
      exit: (info) => this.#onExit(info),
      trace: (record) => this.#trace(record),
      viewChanged: (id) => this[VIEW_CHANGED](id),
      failed: (err) => this.#status.error(err),
      pendingChanged: () => this.#pendingChanged(),
    });
    for (const [method, handler] of Object.entries(this.#options.handlers ?? {})) {
      if (handler !== undefined) this.#handlers.addRequest(method, handler);
    }
    if (this.#options.onSessionUpdate) this.onNotification('session/update', this.#options.onSessionUpdate);
    if (this.#options.onNotification) this.onNotification('*', this.#options.onNotification);
    this.#spawn(false);
  }

  /** Start (or, from the restart policy, restart) the agent process. */
  #spawn(isRestart) {
    const o = this.#options;
    if (o.logger) logging.register(this, o.logger, o.logLevel ?? 'info', (err) => this.#report(err, 'logger', false));
    const nativeOptions = options.nativeOptions(o, this.#handlers.requestMethods());
    const factory = o[CONNECTION_FACTORY] ?? ((opts, onBatch) => new native.AgentConnection(opts, onBatch));
    let conn;
    let onBatch = null;
    try {
      conn = factory(nativeOptions, (text) => onBatch?.(text));
    } catch (err) {
      if (!this.#conn) logging.forget(this);
      throw fromNativeError(err, { command: o.command });
    }
    const dispatcher = this.#dispatcher;
    const stdout = readStdoutHere(conn, (text) => dispatcher.deliverHere(conn, text));
    onBatch = dispatcher.batchCallback(conn, stdout ? () => stdout.delivered() : null);
    this.#stdout = stdout;
    this.#conn = conn;
    this.#stdoutNoise = [];
    this.#dispatcher.attach(conn);
    this.#exit = null;
    this.#exitAnnounced = false;
    this.#closing = false;
    this.#refd = false;
    this.#updateRef();
    this.#untrack = exitHook.track(() => conn.kill());
    this.#status.spawned(isRestart);
    logging.attach(this, conn.pid);
  }

  get pid() {
    return this.#conn.pid;
  }

  /** The exit report once the current agent process is gone, else `null`. */
  get exitInfo() {
    return this.#exit;
  }

  /**
   * Resolves with the last exit report once the client is finished: after
   * `close()`/`kill()`/`dispose()`, or an exit the restart policy does not
   * (or no longer) restart. Never rejects.
   */
  get closed() {
    return this.#closed;
  }

  get openTerminals() {
    return this.#conn.openTerminals;
  }

  get noiseLines() {
    return this.#conn.noiseLines;
  }

  get state() {
    return this.#status.state;
  }

  status() {
    const counters = JSON.parse(this.#conn.statusJson());
    const tracker = this.#status;
    return {
      state: tracker.state,
      pid: counters.pid,
      ...this[AGENT_STATUS](),
      sessions: [...tracker.sessions],
      promptsInFlight: tracker.promptsInFlight,
      pendingRequests: counters.pendingRequests,
      pendingAgentRequests: counters.pendingAgentRequests,
      messagesIn: counters.messagesIn,
      messagesOut: counters.messagesOut,
      bytesIn: counters.bytesIn,
      bytesOut: counters.bytesOut,
      noiseLines: counters.noiseLines,
      stderrDropped: counters.stderrDropped,
      refusedAgentRequests: counters.refusedAgentRequests,
      restarts: tracker.restarts,
      lastError: tracker.lastError,
      exit: this.#exit,
    };
  }

  history() {
    return JSON.parse(this.#conn.historyJson());
  }

  saveHistory(path) {
    return rejecting(async () => {
      check.string('path', path);
      const records = this.history();
      await writeFileSafely(path, records.map((r) => JSON.stringify(r) + '\n').join(''));
      return records.length;
    });
  }

  // ---- handlers -------------------------------------------------------

  onRequest(method, handler) {
    check.string('method', method);
    check.fn('handler', handler);
    return this.#handlers.addRequest(method, handler);
  }

  onNotification(method, handler) {
    check.string('method', method);
    check.fn('handler', handler);
    return this.#handlers.addNotification(method, handler);
  }

  // ---- calls ------------------------------------------------------------

  request(method, params, callOptions) {
    return this.#request(method, params, callOptions);
  }

  /** `hooks`: see Dispatcher.track (client.js's bookkeeping on settling). */
  #request(method, params, callOptions, hooks) {
    let json, timeoutMs, signal;
    try {
      check.string('method', method);
      ({ timeoutMs, signal } = check.callOptions(callOptions));
      json = check.json('params', params);
    } catch (err) {
      return Promise.reject(settledBy(hooks?.error, err));
    }
    return this.#call(method, json, timeoutMs, signal, hooks);
  }

  #call(method, json, timeoutMs, signal, hooks) {
    if (signal?.aborted) return Promise.reject(settledBy(hooks?.error, abortError(method, signal.reason)));
    const o = this.#options;
    const timeout = timeoutMs ?? (method === 'session/prompt' ? o.promptTimeoutMs : o.requestTimeoutMs);
    let id;
    try {
      id = this.#conn.request(method, json, timeout);
    } catch (err) {
      return Promise.reject(settledBy(hooks?.error, this.#nativeError(err)));
    }
    return this.#dispatcher.track(id, method, signal, hooks);
  }

  notify(method, params) {
    return rejecting(() => {
      check.string('method', method);
      const json = check.json('params', params);
      try {
        this.#conn.notify(method, json);
      } catch (err) {
        throw this.#nativeError(err);
      }
      return Promise.resolve();
    });
  }

  // ---- lifecycle --------------------------------------------------------

  close() {
    this.#stopped = true;
    if (this.#exit) {
      // Between a crash and a restart (else the announcement finishes).
      if (this.#exitAnnounced) this.#finished(this.#exit);
    } else {
      this.#beginClosing();
      this.#updateRef();
      this.#conn.close();
    }
    return this.#closed;
  }

  kill() {
    this.#stopped = true;
    if (this.#exit) {
      if (this.#exitAnnounced) this.#finished(this.#exit);
    } else {
      this.#beginClosing();
      this.#conn.kill();
      this.#updateRef();
    }
  }

  /**
   * close()/kill(): nothing waits for the host any more. Batches stop
   * waiting for handlers, and updates() iterators take nothing new (the
   * core still reads the agent for up to closeGraceMs; an iterator nobody
   * reads would buffer all of it).
   */
  #beginClosing() {
    this.#status.closing();
    this.#closing = true;
    this.#dispatcher.closing();
    this.emit(CLOSING);
  }

  /** `close()`, for `context.subscriptions` and `await using`; resolves when the agent is gone. */
  dispose() {
    return this.close().then(() => undefined);
  }

  [asyncDispose]() {
    return this.dispose();
  }

  ref() {
    this.#userRef = true;
    this.#updateRef();
    return this;
  }

  unref() {
    this.#userRef = false;
    this.#updateRef();
    return this;
  }

  /**
   * Our pending calls changed. The ref is taken at once; given back a turn
   * later, so that a caller sending its next call as the last one settles
   * (a loop of requests) keeps it without two native calls per request.
   */
  #pendingChanged() {
    if (this.#dispatcher.pendingCount > 0 || !this.#refd) {
      this.#updateRef();
    } else if (!this.#unrefQueued) {
      this.#unrefQueued = true;
      setImmediate(() => {
        this.#unrefQueued = false;
        this.#updateRef();
      });
    }
  }

  #updateRef() {
    const conn = this.#conn;
    if (!conn) return;
    const want = !this.#exit && (this.#userRef || this.#closing || this.#dispatcher.pendingCount > 0);
    if (want !== this.#refd) {
      this.#refd = want;
      conn.setRef(want);
      this.#stdout?.ref(want);
    }
  }

  // ---- from the dispatcher ------------------------------------------------

  #onExit(info) {
    // What the core logged about the agent before its exit goes first.
    logging.takeRecords();
    this.#exit = info;
    this.#untrack?.();
    this.#untrack = null;
    this.#stdout?.stop();
    this.#conn.release?.();
    const requested = info.reason === 'closed' || info.reason === 'killed';
    this.#status.exited(info, requested);
    this.#updateRef();
    // The pending calls' Promises were rejected just now: the reactions
    // their callers attached are queued already, so `exit` and `closed`
    // come after them, in the same turn (a call awaited after close()
    // still counts as handled).
    queueMicrotask(() => this.#announceExit(info, requested));
  }

  #announceExit(info, requested) {
    this.#exitAnnounced = true;
    const decision = this.#stopped || requested ? null : this.#restart.next();
    // Each step runs even if a listener of the one before throws.
    this.#emit('exit', info);
    if (decision?.delayMs !== undefined) {
      this.#scheduleRestart(decision, info);
    } else {
      if (decision?.giveUp) this.#emit('restartFailed', { reason: decision.giveUp, exit: info });
      this.#finished(info);
    }
  }

  #finished(info) {
    if (this.#done) return;
    this.#done = true;
    logging.forget(this);
    this.#finish(info);
  }

  /** @param {{ attempt?: number, delayMs?: number }} decision RestartPolicy.next()'s restart */
  #scheduleRestart({ attempt, delayMs }, info) {
    setTimeout(() => {
      if (this.#done) return;
      try {
        this.#spawn(true);
      } catch (err) {
        this.#emit('restartFailed', { reason: err.message, error: err, exit: info });
        return this.#finished(info);
      }
      this[RESTARTED]();
      this.#emit('restart', { attempt, exit: info });
      const hook = this.#options.onRestart;
      if (hook) {
        Promise.resolve()
          .then(() => hook(this, { attempt, exit: info }))
          .catch((err) => this.#report(err, 'onRestart'));
      }
    }, delayMs);
  }

  #trace(record) {
    try {
      this.#options.trace(record);
    } catch (err) {
      this.#report(err, 'trace');
    }
  }

  /** emit() with every listener isolated: one that throws is reported, the others still run. */
  #emit(name, ...args) {
    emitIsolated(this, name, args, (err) => {
      if (name === 'handlerError')
        process.emitWarning(`acp-native: a handlerError listener threw: ${err?.stack ?? err}`, 'AcpHandlerWarning');
      else this.#report(err, `${name} listener`);
    });
  }

  /**
   * A host callback threw or rejected: a `handlerError` event (else a
   * process warning), `status().lastError`, and an error log record.
   */
  #report(err, where, log = true) {
    this.#status.error({ code: 'ERR_ACP_HANDLER', message: `${where}: ${err?.message ?? err}` });
    if (log) {
      logging.local(this, {
        level: 'error',
        target: 'acp_native::host',
        message: 'host callback threw',
        fields: { pid: this.#conn?.pid, where, error: String(err?.stack ?? err) },
      });
    }
    if (this.listenerCount('handlerError') > 0) this.#emit('handlerError', err, where);
    else process.emitWarning(`acp-native: a handler for ${where} threw: ${err?.stack ?? err}`, 'AcpHandlerWarning');
  }

  #nativeError(err) {
    const text = this.#exit ? null : this.#conn.exitInfo();
    const exit = this.#exit ?? (text ? JSON.parse(text) : undefined);
    return fromNativeError(err, exit);
  }

  /**
   * The agent part of `status()` (client.js knows the agent).
   * @returns {Pick<import('../index').ClientStatus, 'protocolVersion' | 'agentInfo' | 'agentCapabilities'>}
   */
  [AGENT_STATUS]() {
    return { protocolVersion: null, agentInfo: null, agentCapabilities: null };
  }

  /** A restart spawned a new process (client.js forgets the old agent). */
  [RESTARTED]() {}

  /** A session view changed (client.js owns the views). */
  [VIEW_CHANGED](_id) {}

  /** For client.js and unit tests: state that belongs to this class. */
  get [INTERNAL]() {
    this.#internal ??= {
      status: this.#status,
      options: this.#options,
      handlers: this.#handlers,
      conn: () => this.#conn,
      stdoutHead: () => [...this.#stdoutNoise],
      call: (method, json, timeoutMs, signal, hooks) => this.#call(method, json, timeoutMs, signal, hooks),
      request: (method, params, callOptions, hooks) => this.#request(method, params, callOptions, hooks),
      nativeError: (err) => this.#nativeError(err),
      report: (err, where) => this.#report(err, where),
      emit: (name, ...args) => this.#emit(name, ...args),
    };
    return this.#internal;
  }
}

module.exports = {
  ConnectionBase,
  INTERNAL,
  AGENT_STATUS,
  RESTARTED,
  VIEW_CHANGED,
  CONNECTION_FACTORY,
  CLOSING,
  rejecting,
};
