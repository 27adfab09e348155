'use strict';

const { EventEmitter } = require('node:events');
const { writeFile } = require('node:fs/promises');
const native = require('./loader.js');
const logging = require('./logging.js');
const { StatusTracker } = require('./status.js');
const {
  AcpError,
  fromRpcError,
  fromLocalFailure,
  fromNativeError,
  abortError,
} = require('./errors.js');
const { fsOptions, terminalOptions } = require('./builtins.js');
const { SessionView } = require('./session-view.js');

const PACKAGE_VERSION = require('../package.json').version;

// Items of a delivered batch (see crates/acp-core/src/connection/event.rs).
const NOTIFICATION = 0;
const REQUEST = 1;
const RESPONSE = 2;
const FAILED = 3;
const REQUEST_SETTLED = 4;
const HOST_EVENT = 5;
const TRACE = 6;
const VIEW_CHANGED = 7;

const U32_MAX = 0xffff_ffff;
const EMPTY = Object.freeze([]);

const DEFAULTS = {
  requestTimeoutMs: 60_000,
  initializeTimeoutMs: 30_000,
  promptTimeoutMs: 0,
};

/** Clients whose agent may still be running: killed when the host exits. */
const live = new Set();
let exitHookInstalled = false;
function killAllLive() {
  for (const client of live) client.kill();
}
function installExitHook() {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  // 'exit' handlers run synchronously on process.exit(), on a natural exit
  // and after an uncaught exception; the kill is a synchronous syscall.
  process.on('exit', killAllLive);
}

/** Byte-size options may be Infinity: the native side takes a u32. */
function bytesOption(v) {
  if (v === undefined) return undefined;
  return Number.isFinite(v) ? Math.max(0, Math.min(U32_MAX, Math.floor(v))) : U32_MAX;
}

function toPromptBlocks(prompt) {
  return typeof prompt === 'string' ? [{ type: 'text', text: prompt }] : prompt;
}

function isThenable(v) {
  return v !== null && (typeof v === 'object' || typeof v === 'function') && typeof v.then === 'function';
}

/**
 * A connection to one ACP agent process. See index.d.ts for the API docs.
 */
class AcpClient extends EventEmitter {
  #native;
  #options;
  #pending = new Map(); // our request id → { resolve, reject, method }
  #requestHandlers = new Map(); // method → handler
  // method → handlers; arrays replaced (never mutated) on change, so a
  // dispatch loop in progress is unaffected and the hot path needs no iterator.
  #notificationHandlers = new Map();
  #catchAll = EMPTY;
  #running = new Map(); // agent request token → AbortController
  #exit = null;
  #exitWaiters = [];
  #restarts = [];
  #stopped = false; // close()/kill() was called: never restart // times of automatic restarts, for the restart window
  #closing = false;
  #userRef = false;
  #refd = false;
  #agent = null;
  #stderrTail = '';
  #builtins; // normalised `fs` / `terminals` options
  #status = new StatusTracker((change) => this.emit('state', change));
  #views = new Map(); // sessionId → SessionView (see lib/session-view.js)

  constructor(options) {
    super();
    if (!options || typeof options.command !== 'string' || options.command === '') {
      throw new AcpError('ERR_ACP_INVALID_ARGUMENT', 'options.command must be a non-empty string');
    }
    this.#options = { ...DEFAULTS, ...options };
    this.#builtins = { fs: fsOptions(options.fs), terminals: terminalOptions(options.terminals) };
    for (const [method, handler] of Object.entries(options.handlers ?? {})) {
      this.onRequest(method, handler);
    }
    if (options.onSessionUpdate) this.onNotification('session/update', options.onSessionUpdate);
    if (options.onNotification) this.onNotification('*', options.onNotification);

    this.#spawn();
  }

  /** Start (or, from the restart policy, restart) the agent process behind this client. */
  #spawn(isRestart = false) {
    const options = this.#options;
    const env = options.env
      ? Object.fromEntries(Object.entries(options.env).filter(([, v]) => v !== undefined).map(([k, v]) => [k, String(v)]))
      : undefined;
    if (options.logger) {
      logging.register(this, options.logger, options.logLevel ?? 'info', (err) => this.#report(err, 'logger'));
    }
    let conn;
    try {
      conn = new native.AgentConnection(
        {
          command: options.command,
          args: (options.args ?? []).map(String),
          cwd: options.cwd,
          env,
          clearEnv: options.replaceEnv === true,
          maxLineBytes: options.maxLineBytes,
          stderrTailBytes: options.stderrTailBytes,
          forwardStderr: options.forwardStderr,
          maxWriteQueueBytes: options.maxWriteQueueBytes,
          handlerTimeoutMs: options.handlerTimeoutMs,
          closeGraceMs: options.closeGraceMs,
          termGraceMs: options.termGraceMs,
          batchMaxMessages: options.batchMaxMessages,
          batchMaxBytes: options.batchMaxBytes,
          inFlightBatches: options.inFlightBatches,
          ...this.#builtins,
          hostMethods: [...this.#requestHandlers.keys()],
          trace: typeof options.trace === 'function',
          traceMaxPayloadBytes: bytesOption(options.traceMaxPayloadBytes),
          historySize: options.historySize,
          historyMaxPayloadBytes: bytesOption(options.historyMaxPayloadBytes),
        },
        // Batches of a previous process are ignored after a restart.
        (batch) => this.#native === conn && this.#onBatch(batch),
      );
    } catch (err) {
      throw fromNativeError(err, { command: options.command });
    }
    this.#native = conn;
    this.#exit = null;
    this.#closing = false;
    this.#refd = false;
    this.#updateRef();
    live.add(this);
    installExitHook();
    this.#status.spawned(isRestart);
    logging.attach(this, conn.pid);
    if (isRestart) for (const view of this.#views.values()) view.reopen();
  }

  /** Spawn the agent and run `initialize`; resolves to the ready client. */
  static async connect(options, initializeParams) {
    const client = new AcpClient(options);
    try {
      await client.initialize(initializeParams);
    } catch (err) {
      client.kill();
      throw err;
    }
    return client;
  }

  get pid() {
    return this.#native.pid;
  }

  /** The `initialize` result, once known. */
  get agent() {
    return this.#agent;
  }

  /** The exit report once the agent is gone, else `null`. */
  get exitInfo() {
    return this.#exit;
  }

  get closed() {
    return this.#exit !== null;
  }

  /** Built-in terminals the agent created and has not released. */
  get openTerminals() {
    return this.#native.openTerminals;
  }

  /** Lines of non-JSON output the agent printed on stdout so far. */
  get noiseLines() {
    return this.#native.noiseLines;
  }

  // ---- observability ----------------------------------------------------

  /** Lifecycle state: starting, initializing, ready, busy, closing, closed or failed. */
  get state() {
    return this.#status.state;
  }

  /** A snapshot for status panels and bug reports. */
  status() {
    const counters = JSON.parse(this.#native.statusJson());
    const agent = this.#agent;
    const tracker = this.#status;
    return {
      state: tracker.state,
      pid: counters.pid,
      protocolVersion: agent?.protocolVersion ?? null,
      agentInfo: agent?.agentInfo ?? null,
      agentCapabilities: agent?.agentCapabilities ?? null,
      sessions: [...tracker.sessions],
      promptsInFlight: tracker.promptsInFlight,
      pendingRequests: counters.pendingRequests,
      pendingAgentRequests: counters.pendingAgentRequests,
      messagesIn: counters.messagesIn,
      messagesOut: counters.messagesOut,
      bytesIn: counters.bytesIn,
      bytesOut: counters.bytesOut,
      noiseLines: counters.noiseLines,
      restarts: tracker.restarts,
      lastError: tracker.lastError,
      exit: this.#exit,
    };
  }

  /** The last `historySize` wire messages of the current agent process, oldest first. */
  history() {
    return JSON.parse(this.#native.historyJson());
  }

  /** Write `history()` to `path` as NDJSON (one trace record per line). */
  async saveHistory(path) {
    const records = this.history();
    await writeFile(path, records.map((r) => JSON.stringify(r) + '\n').join(''));
    return records.length;
  }

  // ---- handlers -------------------------------------------------------

  onRequest(method, handler) {
    if (typeof handler !== 'function') throw new TypeError(`handler for ${method} must be a function`);
    this.#requestHandlers.set(method, handler);
    this.#native?.setHostHandler(method, true); // a host handler wins over a built-in
    return {
      dispose: () => {
        if (this.#requestHandlers.get(method) !== handler) return false;
        this.#requestHandlers.delete(method);
        this.#native.setHostHandler(method, false);
        return true;
      },
    };
  }

  onNotification(method, handler) {
    if (typeof handler !== 'function') throw new TypeError(`handler for ${method} must be a function`);
    const entry = { handler, catchAll: method === '*' };
    this.#setHandlers(method, [...this.#handlersOf(method), entry]);
    return { dispose: () => this.#setHandlers(method, this.#handlersOf(method).filter((e) => e !== entry)) };
  }

  #handlersOf(method) {
    return method === '*' ? this.#catchAll : (this.#notificationHandlers.get(method) ?? EMPTY);
  }

  #setHandlers(method, list) {
    if (method === '*') this.#catchAll = list;
    else if (list.length === 0) this.#notificationHandlers.delete(method);
    else this.#notificationHandlers.set(method, list);
  }

  onSessionUpdate(handler) {
    return this.onNotification('session/update', handler);
  }

  /**
   * A live view of a session, folded in the core (see lib/session-view.js);
   * the same view for the same session until it is closed.
   */
  session(sessionId, options) {
    if (typeof sessionId !== 'string') throw new TypeError('sessionId must be a string');
    let view = this.#views.get(sessionId);
    if (!view || view.closed) {
      const port = {
        native: () => this.#native,
        report: (err, where) => this.#report(err, where),
        closed: (v) => this.#views.get(sessionId) === v && this.#views.delete(sessionId),
      };
      view = new SessionView(port, sessionId, options);
      this.#views.set(sessionId, view);
    }
    return view;
  }

  // ---- client → agent ---------------------------------------------------

  initialize(params = {}, options = {}) {
    const served = [...this.#requestHandlers.keys(), ...this.#native.builtinMethods()];
    const derived = JSON.parse(native.clientCapabilities(served));
    const given = params.clientCapabilities ?? {};
    const clientCapabilities = { ...derived, ...given, fs: { ...derived.fs, ...given.fs } };
    const request = {
      ...params,
      protocolVersion: native.protocolVersion(),
      clientCapabilities,
      clientInfo: params.clientInfo ?? this.#options.clientInfo ?? { name: 'acp-native', version: PACKAGE_VERSION },
    };
    const timeoutMs = options.timeoutMs ?? this.#options.initializeTimeoutMs;
    this.#status.initializing();
    return this.request('initialize', request, { ...options, timeoutMs }).then(
      (result) => {
        this.#agent = result;
        this.#status.initialized();
        return result;
      },
      (err) => {
        this.#status.initializeFailed(err);
        // A hung agent is useless: stop it, and report what it said.
        if (err.code === 'ERR_ACP_TIMEOUT') {
          this.kill();
          err.stderrTail = this.#stderrTail;
        }
        throw err;
      },
    );
  }

  authenticate(params, options) {
    return this.request('authenticate', params, options);
  }

  logout(params = {}, options) {
    return this.request('logout', params, options);
  }

  newSession(params = {}, options) {
    return this.request('session/new', { cwd: process.cwd(), mcpServers: [], ...params }, options).then((result) => {
      if (typeof result?.sessionId === 'string') this.#status.sessions.add(result.sessionId);
      return result;
    });
  }

  loadSession(params, options) {
    return this.#sessionOpened(params, this.request('session/load', { cwd: process.cwd(), mcpServers: [], ...params }, options));
  }

  /** Count a loaded/resumed session as open once the agent accepts it. */
  #sessionOpened(params, call) {
    return call.then((result) => {
      if (typeof params?.sessionId === 'string') this.#status.sessions.add(params.sessionId);
      return result;
    });
  }

  #sessionEnded(params, call) {
    return call.then((result) => {
      this.#status.sessions.delete(params?.sessionId);
      return result;
    });
  }

  listSessions(params = {}, options) {
    return this.request('session/list', params, options);
  }

  resumeSession(params, options) {
    return this.#sessionOpened(params, this.request('session/resume', { cwd: process.cwd(), mcpServers: [], ...params }, options));
  }

  closeSession(params, options) {
    return this.#sessionEnded(params, this.request('session/close', params, options));
  }

  deleteSession(params, options) {
    return this.#sessionEnded(params, this.request('session/delete', params, options));
  }

  setSessionMode(params, options) {
    return this.request('session/set_mode', params, options);
  }

  setSessionConfigOption(params, options) {
    return this.request('session/set_config_option', params, options);
  }

  prompt(params, options) {
    const call = this.request('session/prompt', { ...params, prompt: toPromptBlocks(params.prompt) }, options);
    this.#status.promptStarted();
    const ended = () => this.#status.promptEnded();
    call.then(ended, ended);
    return call;
  }

  /**
   * Cancel the session's turn: sends `session/cancel` and answers every
   * request of that session the agent still waits on as cancelled.
   * Returns how many such requests were answered.
   */
  cancel(sessionId) {
    try {
      return this.#native.cancelSession(sessionId);
    } catch (err) {
      throw this.#nativeError(err);
    }
  }

  request(method, params, options = {}) {
    if (typeof method !== 'string') return Promise.reject(new TypeError('method must be a string'));
    const { signal } = options;
    if (signal?.aborted) return Promise.reject(abortError(method, signal.reason));
    const timeoutMs =
      options.timeoutMs ?? (method === 'session/prompt' ? this.#options.promptTimeoutMs : this.#options.requestTimeoutMs);
    let id;
    try {
      const json = params === undefined ? undefined : JSON.stringify(params);
      id = this.#native.request(method, json, timeoutMs);
    } catch (err) {
      return Promise.reject(this.#nativeError(err));
    }
    return new Promise((resolve, reject) => {
      const entry = { resolve, reject, method };
      if (signal) {
        const onAbort = () => {
          if (this.#pending.delete(id)) {
            this.#native.abandon(id, true);
            this.#updateRef();
            reject(abortError(method, signal.reason));
          }
        };
        signal.addEventListener('abort', onAbort, { once: true });
        entry.resolve = (v) => {
          signal.removeEventListener('abort', onAbort);
          resolve(v);
        };
        entry.reject = (e) => {
          signal.removeEventListener('abort', onAbort);
          reject(e);
        };
      }
      this.#pending.set(id, entry);
      this.#updateRef();
    });
  }

  notify(method, params) {
    try {
      this.#native.notify(method, params === undefined ? undefined : JSON.stringify(params));
    } catch (err) {
      throw this.#nativeError(err);
    }
  }

  // ---- lifecycle --------------------------------------------------------

  /**
   * Stop the agent: stdin EOF, wait `closeGraceMs` (stdout is still read),
   * SIGTERM its process group, wait `termGraceMs`, SIGKILL. Resolves with
   * the exit report once the agent is gone and every call has settled.
   */
  close() {
    this.#stopped = true;
    if (!this.#exit) {
      this.#status.closing();
      this.#closing = true;
      this.#updateRef();
      this.#native.close();
    }
    return this.#waitExit();
  }

  /** SIGKILL the agent's process group now. */
  kill() {
    this.#stopped = true;
    if (!this.#exit) {
      this.#status.closing();
      this.#closing = true;
      this.#native.kill();
      this.#updateRef();
    }
  }

  /** Resolves with the exit report when the agent is gone. */
  #waitExit() {
    if (this.#exit) return Promise.resolve(this.#exit);
    return new Promise((resolve) => this.#exitWaiters.push(resolve));
  }

  /** Keep the Node process alive while this client is open. */
  ref() {
    this.#userRef = true;
    this.#updateRef();
    return this;
  }

  /** Let Node exit while this client is idle (the default). */
  unref() {
    this.#userRef = false;
    this.#updateRef();
    return this;
  }

  #updateRef() {
    const want = !this.#exit && (this.#userRef || this.#closing || this.#pending.size > 0);
    if (want !== this.#refd) {
      this.#refd = want;
      this.#native.setRef(want);
    }
  }

  // ---- agent → client ---------------------------------------------------

  #onBatch(text) {
    let items;
    try {
      items = JSON.parse(text);
    } catch (err) {
      this.#ack();
      this.#report(err, 'batch');
      return;
    }
    let waits = null;
    // Items are flat triples: kind, a, b (see the core's event.rs).
    for (let i = 0; i < items.length; i += 3) {
      switch (items[i]) {
        case NOTIFICATION: {
          const pending = this.#dispatchNotification(items[i + 1], items[i + 2] ?? undefined);
          if (pending) (waits ??= []).push(...pending);
          break;
        }
        case REQUEST:
          this.#dispatchRequest(items[i + 1], items[i + 2]);
          break;
        case RESPONSE:
          this.#settle(items[i + 1], items[i + 2]);
          break;
        case FAILED:
          this.#fail(items[i + 1], fromLocalFailure(items[i + 2]));
          break;
        case REQUEST_SETTLED:
          this.#running.get(items[i + 1])?.abort(new AcpError('ERR_ACP_ABORTED', `request ${items[i + 2]}`));
          this.#running.delete(items[i + 1]);
          break;
        case HOST_EVENT:
          this.#onHostEvent(items[i + 1], items[i + 2]);
          break;
        case TRACE:
          this.#onTrace(items[i + 1]);
          break;
        case VIEW_CHANGED:
          this.#viewChanged(items[i + 1]);
          break;
      }
    }
    // Backpressure: the next batches wait for async notification handlers.
    if (waits) {
      Promise.allSettled(waits).then(() => this.#ack());
    } else {
      this.#ack();
    }
  }

  /**
   * Ask for the next batch only after the event loop had a turn: Node
   * runs queued native calls back to back, so acknowledging at once would
   * let a flood keep timers and I/O of the host waiting.
   */
  #ack() {
    const conn = this.#native;
    setImmediate(() => conn.ack());
  }

  #dispatchNotification(method, params) {
    const specific = this.#notificationHandlers.get(method) ?? EMPTY;
    const any = this.#catchAll;
    if (specific.length === 0 && any.length === 0) return null;
    const msg = { jsonrpc: '2.0', method, params };
    let pending = null;
    for (let i = 0; i < specific.length; i++) pending = this.#invoke(specific[i], msg, pending);
    for (let i = 0; i < any.length; i++) pending = this.#invoke(any[i], msg, pending);
    return pending;
  }

  /** Call one notification handler; collect its Promise for backpressure. */
  #invoke(entry, msg, pending) {
    try {
      const r = entry.catchAll ? entry.handler(msg.method, msg.params, msg) : entry.handler(msg.params, msg);
      if (r !== undefined && isThenable(r)) {
        (pending ??= []).push(Promise.resolve(r).catch((err) => this.#report(err, msg.method)));
      }
    } catch (err) {
      this.#report(err, msg.method);
    }
    return pending;
  }

  #dispatchRequest(token, msg) {
    const handler = this.#requestHandlers.get(msg.method);
    if (!handler) {
      this.#native.respondError(token, -32601, `Method not found: ${msg.method}`);
      return;
    }
    const controller = new AbortController();
    this.#running.set(token, controller);
    let result;
    try {
      result = handler(msg.params, { signal: controller.signal, method: msg.method, id: msg.id });
    } catch (err) {
      this.#replyError(token, err);
      return;
    }
    if (isThenable(result)) {
      Promise.resolve(result).then(
        (value) => this.#reply(token, value),
        (err) => this.#replyError(token, err),
      );
    } else {
      this.#reply(token, result);
    }
  }

  #reply(token, value) {
    this.#running.delete(token);
    let json;
    try {
      json = JSON.stringify(value === undefined ? null : value) ?? 'null';
    } catch (err) {
      this.#replyError(token, err);
      return;
    }
    this.#native.respond(token, json);
  }

  #replyError(token, err) {
    this.#running.delete(token);
    const code = Number.isInteger(err?.rpcCode) ? err.rpcCode : Number.isInteger(err?.code) ? err.code : -32603;
    const message = typeof err?.message === 'string' ? err.message : String(err);
    let data;
    try {
      data = err?.data === undefined ? undefined : JSON.stringify(err.data);
    } catch {
      data = undefined;
    }
    this.#native.respondError(token, code, message, data);
  }

  #settle(id, msg) {
    const entry = this.#pending.get(id);
    if (!entry) return;
    this.#pending.delete(id);
    this.#updateRef();
    if (msg.error !== undefined && msg.error !== null) {
      const err = fromRpcError(msg.error, entry.method);
      this.#status.error(err);
      entry.reject(err);
    } else entry.resolve(msg.result);
  }

  #fail(id, err) {
    const entry = this.#pending.get(id);
    if (!entry) return;
    this.#pending.delete(id);
    this.#updateRef();
    this.#status.error(err);
    entry.reject(err);
  }

  #onHostEvent(name, payload) {
    switch (name) {
      case 'stderr':
        this.#stderrTail = (this.#stderrTail + payload).slice(-8192);
        this.emit('stderr', payload);
        break;
      case 'exit':
        this.#onExit(payload);
        break;
      default:
        this.emit(name, payload);
    }
  }

  #viewChanged(id) {
    for (const view of this.#views.values()) if (view.id === id) view.changed();
  }

  #onTrace(record) {
    try {
      this.#options.trace(record);
    } catch (err) {
      this.#report(err, 'trace');
    }
  }

  #onExit(info) {
    this.#exit = info;
    live.delete(this);
    this.#status.exited(info, info.reason === 'closed' || info.reason === 'killed');
    if (this.#stopped || !this.#options.restart) logging.forget(this);
    // The core settled every pending call before this item; anything left
    // here was registered in the same instant and is settled the same way.
    for (const [id, entry] of this.#pending) {
      this.#pending.delete(id);
      entry.reject(
        new AcpError('ERR_ACP_CLOSED', `agent connection closed before answering ${entry.method}`, {
          ...info,
          method: entry.method,
        }),
      );
    }
    for (const controller of this.#running.values()) controller.abort(new AcpError('ERR_ACP_CLOSED', 'agent exited'));
    this.#running.clear();
    this.#updateRef();
    this.emit('exit', info);
    for (const resolve of this.#exitWaiters.splice(0)) resolve(info);
    this.#maybeRestart(info);
  }

  /** The opt-in restart policy: only for exits the host did not ask for. */
  #maybeRestart(info) {
    const policy = this.#options.restart;
    if (!policy || this.#stopped || info.reason === 'closed' || info.reason === 'killed') return;
    const { maxRestarts = 3, windowMs = 60_000, backoffMs = 500, maxBackoffMs = 10_000 } = policy;
    const now = Date.now();
    this.#restarts = this.#restarts.filter((t) => now - t < windowMs);
    if (this.#restarts.length >= maxRestarts) {
      this.emit('restartFailed', { reason: `${maxRestarts} restarts within ${windowMs} ms`, exit: info });
      return;
    }
    const attempt = this.#restarts.length + 1;
    this.#restarts.push(now);
    const delay = Math.min(backoffMs * 2 ** (attempt - 1), maxBackoffMs);
    setTimeout(() => {
      if (this.#stopped) return;
      try {
        this.#spawn(true);
      } catch (err) {
        this.emit('restartFailed', { reason: err.message, error: err, exit: info });
        return;
      }
      this.#agent = null;
      this.emit('restart', { attempt, exit: info });
      const hook = this.#options.onRestart;
      if (hook) {
        Promise.resolve()
          .then(() => hook(this, { attempt, exit: info }))
          .catch((err) => this.#report(err, 'onRestart'));
      }
    }, delay);
  }

  #report(err, where) {
    if (this.listenerCount('handlerError') > 0) this.emit('handlerError', err, where);
    else process.emitWarning(`acp-native: a handler for ${where} threw: ${err?.stack ?? err}`, 'AcpHandlerWarning');
  }

  #nativeError(err) {
    const text = this.#exit ? null : this.#native.exitInfo();
    const exit = this.#exit ?? (text ? JSON.parse(text) : undefined);
    return fromNativeError(err, exit);
  }
}

module.exports = { AcpClient };
