'use strict';

// `client.updates(sessionId, {signal})`: one session's updates as an async
// iterator. Backpressure comes from the batch protocol: while the buffer
// is full the notification handler returns a pending Promise, the batch is
// not acknowledged, and the core stops reading the agent's stdout once its
// in-flight batches are spent. So the consumer's pace is the read pace.

const { CLOSING } = require('./connection.js');

const DEFAULT_HIGH_WATER_MARK = 64;

/** Emitted by the client (`sessionId`) once session/close or session/delete succeeded. */
const SESSION_ENDED = Symbol('acp-native.sessionEnded');

class UpdateStream {
  #queue = [];
  #waiters = []; // resolve functions of next() calls waiting for an update
  /** @type {{ promise: Promise<void>, resolve: () => void } | null} */
  #room = null; // while the buffer is full
  #done = false;
  #highWaterMark;
  #subscription;
  #client;
  #onEnd;
  #onSessionEnded;
  #signal;
  #onAbort;

  constructor(client, sessionId, signal, highWaterMark) {
    this.#client = client;
    this.#highWaterMark = highWaterMark ?? DEFAULT_HIGH_WATER_MARK; // checked by client.updates()
    this.#subscription = client.onSessionUpdate((params) => {
      if (this.#done || params?.sessionId !== sessionId) return undefined;
      const waiter = this.#waiters.shift();
      if (waiter) {
        waiter({ value: params, done: false });
        return undefined;
      }
      this.#queue.push(params);
      if (this.#queue.length < this.#highWaterMark) return undefined;
      if (!this.#room) {
        /** @type {(() => void) | undefined} */
        let resolve;
        const promise = /** @type {Promise<void>} */ (new Promise((r) => (resolve = r)));
        // The executor ran: resolve is set.
        this.#room = { promise, resolve: /** @type {() => void} */ (resolve) };
      }
      return this.#room.promise;
    });
    // The session ends with its agent process, and nothing new is taken
    // once the host closes: what is buffered is still delivered.
    this.#onEnd = () => this.#end(false);
    client.on('exit', this.#onEnd);
    client.on(CLOSING, this.#onEnd);
    this.#onSessionEnded = (id) => id === sessionId && this.#end(false);
    client.on(SESSION_ENDED, this.#onSessionEnded);
    if (signal) {
      this.#signal = signal;
      // The signal means "nothing new": what already arrived is still delivered.
      this.#onAbort = () => this.#end(false);
      if (signal.aborted) this.#end(false);
      else signal.addEventListener('abort', this.#onAbort, { once: true });
    }
    // Created while the client closes or after it ended: nothing will come
    // (and a flood read during closeGraceMs must not be buffered here).
    if (['closing', 'closed', 'failed'].includes(client.state)) this.#end(false);
  }

  next() {
    if (this.#queue.length > 0) {
      const value = this.#queue.shift();
      if (this.#room && this.#queue.length < this.#highWaterMark) this.#release();
      return Promise.resolve({ value, done: false });
    }
    if (this.#done) return Promise.resolve({ value: undefined, done: true });
    return new Promise((resolve) => this.#waiters.push(resolve));
  }

  /**
   * `break` out of `for await`, or stop early: unsubscribes and lets reading go on.
   * @returns {Promise<IteratorReturnResult<undefined>>}
   */
  return() {
    this.#end(true);
    return Promise.resolve({ value: undefined, done: true });
  }

  [Symbol.asyncIterator]() {
    return this;
  }

  #release() {
    const room = this.#room;
    this.#room = null;
    room?.resolve();
  }

  /** Stop listening; `drop` discards what is buffered (`return()`, i.e. `break`). */
  #end(drop) {
    if (this.#done) return;
    this.#done = true;
    this.#subscription.dispose();
    this.#client.off('exit', this.#onEnd);
    this.#client.off(CLOSING, this.#onEnd);
    this.#client.off(SESSION_ENDED, this.#onSessionEnded);
    this.#signal?.removeEventListener('abort', this.#onAbort);
    if (drop) this.#queue.length = 0;
    this.#release();
    for (const waiter of this.#waiters.splice(0)) waiter({ value: undefined, done: true });
  }
}

module.exports = { UpdateStream, SESSION_ENDED };
