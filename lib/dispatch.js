'use strict';

// The JS mirror of the core's connection: our requests waiting for an
// answer, the agent's requests our handlers are working on, and the
// decoding of delivered batches. Every host callback runs isolated: a
// throw is reported through `host.report` and never loses an item or the
// batch's acknowledgement.

const { native } = require('./loader.js');
const { AcpError, RpcError, fromRpcError, fromFailure, abortError } = require('./errors.js');
const { keepFullResult } = require('./results.js');

/** @typedef {import('../binding').AgentConnection} AgentConnection */

// Item kinds, as the core numbers them (crates/acp-core/src/connection/event.rs).
// Read from the binary when the first dispatcher is made, not at require
// time: a bundle must be able to call loadNativeBinding first.
let NOTIFICATION, REQUEST, RESPONSE, FAILED, REQUEST_SETTLED, HOST, TRACE, VIEW_CHANGED, SESSION_UPDATE;
function readKinds() {
  if (NOTIFICATION !== undefined) return;
  const k = native.itemKinds();
  [NOTIFICATION, REQUEST, RESPONSE, FAILED, REQUEST_SETTLED, HOST, TRACE, VIEW_CHANGED, SESSION_UPDATE] = [
    k.notification,
    k.request,
    k.response,
    k.failed,
    k.requestSettled,
    k.host,
    k.trace,
    k.viewChanged,
    k.sessionUpdate,
  ];
}

/** The full params the core keeps while request `token` waits. */
function fullParams(conn, token, method) {
  const text = conn.fullParams(token);
  if (text === null || text === undefined) {
    throw new AcpError('ERR_ACP_CLOSED', `the request ${method} was answered: its full params are gone`);
  }
  return text;
}

function isThenable(v) {
  return v !== null && (typeof v === 'object' || typeof v === 'function') && typeof v.then === 'function';
}

/**
 * An agent request a handler is working on. Its AbortSignal is made only
 * when the handler first reads `context.signal` (already aborted if the
 * answer stopped being wanted before): most handlers never read it, and
 * making one costs more than the rest of the request's dispatch.
 */
class Running {
  /** @type {AbortController | null} */
  #controller = null;
  #aborted = false;
  #reason;

  get signal() {
    if (this.#controller === null) {
      this.#controller = new AbortController();
      if (this.#aborted) this.#controller.abort(this.#reason);
    }
    return this.#controller.signal;
  }

  abort(reason) {
    if (this.#aborted) return;
    this.#aborted = true;
    this.#reason = reason;
    this.#controller?.abort(reason);
  }
}

/**
 * `host` is what the dispatcher reports to:
 * - `report(err, where)`: a host callback threw (never throws itself);
 * - `event(name, payload)`: a connection event (`stderr`, `protocolError`…);
 * - `exit(info)`: the agent is gone, every pending call already settled;
 * - `trace(record)`: a wire message, when tracing is on;
 * - `viewChanged(id)`: session view `id` has changes to drain;
 * - `failed(err)`: one of our requests failed (for `status().lastError`);
 * - `pendingChanged()`: our pending request count changed (ref counting).
 */
class Dispatcher {
  /**
   * The current process's connection. Set by attach() right after the
   * spawn, before any call is tracked or batch delivered.
   * @type {AgentConnection}
   */
  #conn;
  #handlers;
  #host;
  #pending = new Map(); // our request id → { resolve, reject, method }
  #running = new Map(); // agent request token → Running
  #held = new Set(); // acks of batches waiting for handlers' Promises
  #closed = false; // the host closes: batches no longer wait

  constructor(handlers, host) {
    readKinds();
    this.#handlers = handlers;
    this.#host = host;
  }

  /** Follow a new agent process; batches of the previous one are ignored. */
  attach(conn) {
    this.#conn = conn;
  }

  /** The batch callback for `conn`; `delivered()` runs after each batch. */
  batchCallback(conn, delivered) {
    return (text) => {
      if (this.#conn !== conn) return;
      this.#onBatch(conn, text);
      delivered?.();
    };
  }

  /** A batch read on this thread (lib/host-stdout.js), acknowledged as any. */
  deliverHere(conn, text) {
    if (this.#conn === conn) this.#onBatch(conn, text);
  }

  get pendingCount() {
    return this.#pending.size;
  }

  /**
   * Track request `id` (already sent) until it settles. With a `signal`,
   * an abort stops waiting and cancels it on the wire. `hooks.result(v)`
   * and `hooks.error(err)` (both optional) run as it settles and give
   * what the Promise settles with: the caller's bookkeeping happens in
   * the same step, no `.then()` wrapper settles later than the call (the
   * `exit` event must come after every call's Promise has settled).
   */
  track(id, method, signal, hooks) {
    return new Promise((settleResolve, settleReject) => {
      const resolve = hooks?.result
        ? (v) => {
            try {
              settleResolve(hooks.result(v));
            } catch (err) {
              settleReject(err);
            }
          }
        : settleResolve;
      const reject = hooks?.error
        ? (e) => {
            let out;
            try {
              out = hooks.error(e);
            } catch (err) {
              out = err;
            }
            settleReject(out);
          }
        : settleReject;
      const entry = { resolve, reject, method };
      if (signal) {
        const conn = this.#conn;
        const onAbort = () => {
          if (this.#pending.delete(id)) {
            conn.abandon(id, true);
            this.#host.pendingChanged();
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
      this.#host.pendingChanged();
    });
  }

  #onBatch(conn, text) {
    // Promises async notification handlers returned → the method, for the
    // report if one rejects. A Map: a handler returning the same Promise
    // for many items (a full updates() buffer) is waited for once.
    const waits = new Map();
    try {
      const items = JSON.parse(text);
      // Items are flat triples: kind, a, b (see the core's event.rs).
      for (let i = 0; i < items.length; i += 3) {
        try {
          this.#dispatch(items[i], items[i + 1], items[i + 2], waits);
        } catch (err) {
          // Each callback is already isolated; this guards the loop itself.
          this.#host.report(err, 'dispatch');
        }
      }
    } catch (err) {
      this.#host.report(err, 'batch');
    }
    // Backpressure: the next batches wait for async notification handlers,
    // until the host closes: then nothing may hold the exit item back.
    if (waits.size === 0 || this.#closed) {
      this.#ack(conn);
      return;
    }
    // Acknowledged once: by the handlers settling, or by closing(). Kept
    // in a set only while it waits, not in a race against a close Promise:
    // that would keep every batch's reaction alive until the close.
    const ack = () => {
      if (this.#held.delete(ack)) this.#ack(conn);
    };
    this.#held.add(ack);
    Promise.all(
      Array.from(waits, ([p, method]) => Promise.resolve(p).catch((err) => this.#host.report(err, method))),
    ).then(ack);
  }

  /**
   * The host called close()/kill(): batches stop waiting for notification
   * handlers (one that never settles, or an updates() iterator nobody
   * reads, would otherwise keep the exit item, and close(), waiting).
   */
  closing() {
    this.#closed = true;
    for (const ack of this.#held) ack();
  }

  /**
   * Ask for the next batch only after the event loop had a turn: Node
   * runs queued native calls back to back, so acknowledging at once would
   * let a flood keep timers and I/O of the host waiting.
   */
  #ack(conn) {
    setImmediate(() => conn.ack());
  }

  #dispatch(kind, a, b, waits) {
    switch (kind) {
      case SESSION_UPDATE:
        this.#notification('session/update', a ?? undefined, waits);
        return;
      case NOTIFICATION:
        this.#notification(a, b ?? undefined, waits);
        return;
      case REQUEST:
        this.#request(a, b);
        return;
      case RESPONSE:
        this.#settle(a, b);
        return;
      case FAILED:
        this.#fail(a, fromFailure(b));
        return;
      case REQUEST_SETTLED:
        this.#running.get(a)?.abort(new AcpError('ERR_ACP_ABORTED', `request ${b}`));
        this.#running.delete(a);
        return;
      case HOST:
        if (a === 'exit') this.#exit(b);
        else this.#host.event(a, b);
        return;
      case TRACE:
        this.#host.trace(a);
        return;
      case VIEW_CHANGED:
        this.#host.viewChanged(a);
    }
  }

  #notification(method, params, waits) {
    const [specific, any] = this.#handlers.notificationHandlers(method);
    if (specific.length === 0 && any.length === 0) return;
    const msg = { jsonrpc: '2.0', method, params };
    for (let i = 0; i < specific.length; i++) this.#invoke(specific[i], msg, waits);
    for (let i = 0; i < any.length; i++) this.#invoke(any[i], msg, waits);
  }

  /** Call one notification handler; note its Promise for backpressure. */
  #invoke(handler, msg, waits) {
    try {
      const r = handler(msg.params, msg);
      if (r !== undefined && isThenable(r) && !waits.has(r)) waits.set(r, msg.method);
    } catch (err) {
      this.#host.report(err, msg.method);
    }
  }

  #request(token, item) {
    const conn = this.#conn;
    // Params over maxHandlerParamsBytes come cut, wrapped by the core (an
    // agent's message always has a method, the wrapper never does).
    const cut = item.method === undefined;
    const msg = cut ? item.request : item;
    const handler = this.#handlers.requestHandler(msg.method);
    if (!handler) {
      conn.respondError(token, -32601, `Method not found: ${msg.method}`);
      return;
    }
    const running = new Running();
    this.#running.set(token, running);
    const context = {
      get signal() {
        return running.signal;
      },
      method: msg.method,
      requestId: msg.id,
      paramsCut: cut,
      rawParams: cut ? () => fullParams(conn, token, msg.method) : () => JSON.stringify(msg.params ?? null),
    };
    let result;
    try {
      result = handler(msg.params, context);
    } catch (err) {
      this.#replyError(conn, token, msg.method, err);
      return;
    }
    if (isThenable(result)) {
      Promise.resolve(result).then(
        (value) => this.#reply(conn, token, msg.method, value),
        (err) => this.#replyError(conn, token, msg.method, err),
      );
    } else {
      this.#reply(conn, token, msg.method, result);
    }
  }

  #reply(conn, token, method, value) {
    this.#running.delete(token);
    let json;
    try {
      json = JSON.stringify(value === undefined ? null : value) ?? 'null';
    } catch (err) {
      this.#replyError(conn, token, method, err);
      return;
    }
    conn.respond(token, json);
  }

  /**
   * A handler failed. An `RpcError` is the host's chosen answer, forwarded
   * as it is; anything else is a fault: reported, and the agent gets -32603
   * without the host's message. Which methods get an outcome instead of
   * an error (permission, elicitation) is the core's rule (replies.rs).
   */
  #replyError(conn, token, method, err) {
    this.#running.delete(token);
    if (err instanceof RpcError || (err?.name === 'RpcError' && Number.isInteger(err?.rpcCode))) {
      let data;
      try {
        data = err.data === undefined ? undefined : JSON.stringify(err.data);
      } catch {
        data = undefined;
      }
      conn.respondChosenError(token, err.rpcCode, String(err.message), data);
      return;
    }
    this.#host.report(err, method);
    conn.respondError(token, -32603, `Internal error: the handler for ${method} failed`);
  }

  #settle(id, msg) {
    // A result over maxResultBytes comes cut, wrapped by the core (an
    // agent's answer always has an id, the wrapper never does): its full
    // text is taken now, whether or not the call still waits.
    const full = msg.id === undefined ? this.#conn.takeFullResult(id) : null;
    const entry = this.#pending.get(id);
    if (!entry) return;
    this.#pending.delete(id);
    this.#host.pendingChanged();
    if (msg.error !== undefined && msg.error !== null) {
      const err = fromRpcError(msg.error, entry.method);
      this.#host.failed(err);
      entry.reject(err);
    } else entry.resolve(keepFullResult(msg.result, full));
  }

  #fail(id, err) {
    const entry = this.#pending.get(id);
    if (!entry) return;
    this.#pending.delete(id);
    this.#host.pendingChanged();
    this.#host.failed(err);
    entry.reject(err);
  }

  #exit(info) {
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
    for (const running of this.#running.values()) running.abort(new AcpError('ERR_ACP_CLOSED', 'agent exited'));
    this.#running.clear();
    this.#host.pendingChanged();
    this.#host.exit(info);
  }
}

module.exports = { Dispatcher };
