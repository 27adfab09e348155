'use strict';

// Agents still running when the host process exits are killed: 'exit'
// handlers run synchronously on process.exit(), on a natural exit and
// after an uncaught exception, and the kill is a synchronous syscall.

const live = new Set();
let installed = false;

function killAll() {
  for (const kill of live) {
    try {
      kill();
    } catch {
      // one agent's failure must not spare the others
    }
  }
}

/** Register a kill function while its agent runs; returns the unregister function. */
function track(kill) {
  if (!installed) {
    installed = true;
    process.on('exit', killAll);
  }
  live.add(kill);
  return () => live.delete(kill);
}

module.exports = { track };
