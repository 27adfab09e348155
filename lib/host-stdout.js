'use strict';

// Linux and macOS: the agent's stdout read
// on this thread's event loop while the agent is quiet, so that an answer
// wakes one thread (this one), not the core's reader and then this one.
// While it floods, while a session view is open, and at its exit, the
// core's reader thread reads (and frames, folds and batches off this thread). The core decides and polls
// the fd itself (src/host_poll.rs); this side only says when a batch came
// through `onBatch`, the moment the core may have given the fd back.

/**
 * Read `conn`'s stdout here if the core lets it, else null. `deliver(text)`
 * dispatches a batch now.
 */
function readStdoutHere(conn, deliver) {
  if (!conn.readStdoutHere?.(deliver)) return null;
  return {
    /** A batch arrived through onBatch: the core may have given the fd back. */
    delivered() {
      conn.resumeStdout();
    },
    ref(on) {
      conn.refStdout(on);
    },
    /** The agent is gone. */
    stop() {
      conn.stopStdout();
    },
  };
}

module.exports = { readStdoutHere };
