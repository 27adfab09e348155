'use strict';

// The opt-in restart policy, as a pure decision: given an exit, restart
// after a delay or give up. The client owns the timer and the spawn.

class RestartPolicy {
  #policy;
  #times = []; // when automatic restarts happened, within the window

  /** `policy`: the `restart` option (falsy = never restart). */
  constructor(policy) {
    this.#policy = policy || null;
  }

  get enabled() {
    return this.#policy !== null;
  }

  /**
   * What to do after an exit the host did not ask for:
   * `{attempt, delayMs}` or `{giveUp: reason}`; `null` when off.
   */
  next(now = Date.now()) {
    if (!this.#policy) return null;
    const { maxRestarts = 3, windowMs = 60_000, backoffMs = 500, maxBackoffMs = 10_000 } = this.#policy;
    this.#times = this.#times.filter((t) => now - t < windowMs);
    if (this.#times.length >= maxRestarts) return { giveUp: `${maxRestarts} restarts within ${windowMs} ms` };
    const attempt = this.#times.length + 1;
    this.#times.push(now);
    return { attempt, delayMs: Math.min(backoffMs * 2 ** (attempt - 1), maxBackoffMs) };
  }
}

module.exports = { RestartPolicy };
