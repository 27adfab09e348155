'use strict';

// The client's lifecycle state machine and the bookkeeping behind
// `client.status()`: open sessions, prompts in flight, restarts, last error.
//
//   starting → initializing → ready ⇄ busy → closing → closed
//                    any state → failed (unexpected exit, failed initialize)
//   a restart goes back to starting.

/** @typedef {import('../index').ClientState} ClientState */

class StatusTracker {
  /** @type {ClientState} */
  state = 'starting';
  sessions = new Set();
  promptsInFlight = 0;
  restarts = 0;
  /** @type {import('../index').ClientStatus['lastError']} */
  lastError = null;
  #emit;

  /** `emit(change)` is called with `{ state, previous, reason }` on every transition. */
  constructor(emit) {
    this.#emit = emit;
  }

  /**
   * @param {ClientState} state
   * @param {string} [reason]
   */
  set(state, reason) {
    if (state === this.state) return;
    const previous = this.state;
    this.state = state;
    this.#emit({ state, previous, ...(reason ? { reason } : {}) });
  }

  spawned(isRestart) {
    if (isRestart) this.restarts++;
    this.sessions.clear();
    this.promptsInFlight = 0;
    this.set('starting', isRestart ? 'restart' : undefined);
  }

  initializing() {
    if (this.state === 'starting') this.set('initializing');
  }

  initialized() {
    if (this.state === 'initializing' || this.state === 'starting')
      this.set(this.promptsInFlight > 0 ? 'busy' : 'ready');
  }

  error(err) {
    this.lastError = {
      code: err?.code ?? 'ERR_ACP_UNKNOWN',
      message: String(err?.message ?? err),
      time: Date.now(),
    };
  }

  initializeFailed(err) {
    this.error(err);
    if (this.state !== 'closing' && this.state !== 'closed') this.set('failed', err?.code);
  }

  promptStarted() {
    this.promptsInFlight++;
    if (this.state === 'ready') this.set('busy');
  }

  /** `agentGone`: it failed because the agent exited; `exited()` follows and sets the state. */
  promptEnded(agentGone = false) {
    this.promptsInFlight = Math.max(0, this.promptsInFlight - 1);
    if (!agentGone && this.promptsInFlight === 0 && this.state === 'busy') this.set('ready');
  }

  closing() {
    if (this.state !== 'closed' && this.state !== 'failed') this.set('closing');
  }

  exited(info, requested) {
    this.sessions.clear();
    this.promptsInFlight = 0;
    if (requested) {
      this.set(this.state === 'failed' ? 'failed' : 'closed', info.reason);
    } else {
      this.error({
        code: 'ERR_ACP_CLOSED',
        message: `agent exited unexpectedly (${info.signal ? `signal ${info.signal}` : `code ${info.exitCode}`})`,
      });
      this.set('failed', 'exited');
    }
  }
}

module.exports = { StatusTracker };
