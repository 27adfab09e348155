'use strict';

// The host's handlers: one registry of agent → client request handlers and
// one of notification handlers. Every registration returns a Disposable.

/** @typedef {(params: unknown, msg: object) => unknown} NotificationHandler */

/** @type {readonly NotificationHandler[]} */
const EMPTY = Object.freeze([]);

class HandlerRegistry {
  #requests = new Map(); // method → handler
  // method → handlers; arrays replaced (never mutated) on change, so a
  // dispatch loop in progress is unaffected and the hot path needs no iterator.
  #notifications = new Map();
  #catchAll = EMPTY;
  #onRequestsChanged;

  /** `onRequestsChanged(method, handled)` tells the core who serves a method. */
  constructor(onRequestsChanged) {
    this.#onRequestsChanged = onRequestsChanged;
  }

  requestHandler(method) {
    return this.#requests.get(method);
  }

  requestMethods() {
    return [...this.#requests.keys()];
  }

  /** Register (or replace) the handler of an agent request method. */
  addRequest(method, handler) {
    this.#requests.set(method, handler);
    this.#onRequestsChanged(method, true);
    return disposable(() => {
      if (this.#requests.get(method) !== handler) return;
      this.#requests.delete(method);
      this.#onRequestsChanged(method, false);
    });
  }

  /** Add a notification handler; `'*'` receives every notification. */
  addNotification(method, handler) {
    this.#set(method, [...this.#of(method), handler]);
    return disposable(() =>
      this.#set(
        method,
        this.#of(method).filter((h) => h !== handler),
      ),
    );
  }

  /** The handlers of `method`, then the catch-all ones (each array frozen in time). */
  notificationHandlers(method) {
    return [this.#notifications.get(method) ?? EMPTY, this.#catchAll];
  }

  #of(method) {
    return method === '*' ? this.#catchAll : (this.#notifications.get(method) ?? EMPTY);
  }

  #set(method, list) {
    if (method === '*') this.#catchAll = list;
    else if (list.length === 0) this.#notifications.delete(method);
    else this.#notifications.set(method, list);
  }
}

/** A Disposable whose `dispose()` runs `fn` once. */
function disposable(fn) {
  let done = false;
  return {
    dispose() {
      if (done) return;
      done = true;
      fn();
    },
  };
}

module.exports = { HandlerRegistry };
