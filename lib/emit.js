'use strict';

/**
 * `emitter.emit(name, ...args)` with every listener isolated: one that
 * throws is handed to `onError` and the listeners after it still run
 * (EventEmitter.emit stops at the first throw, and the others lose the
 * item).
 */
function emitIsolated(emitter, name, args, onError) {
  const listeners = emitter.rawListeners(name);
  for (const listener of listeners) {
    try {
      listener.apply(emitter, args);
    } catch (err) {
      onError(err);
    }
  }
}

module.exports = { emitIsolated };
