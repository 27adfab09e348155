'use strict';

// EXPERIMENTAL (Unix; ACP_NATIVE_READ_ON_HOST=1): the agent's stdout read
// on this thread's event loop and fed to the core, so that an answer wakes
// one thread (this one), not the core's reader and then this one. The core
// handles the lines as its reader would and hands back a batch to dispatch
// at once (acknowledged as any batch) when nothing queued before it still
// waits to reach JS and the host may hold one more batch; else it queues
// the items behind the others (they arrive through onBatch). Reading stops
// while the core's queue has no room.

const net = require('node:net');

const EMPTY = Buffer.alloc(0);

/**
 * Read `conn`'s stdout here if the core gave its fd out, else null.
 * `deliver(text)` dispatches a batch now.
 */
function readStdoutHere(conn, deliver) {
  const fd = conn.takeStdout?.();
  if (fd === null || fd === undefined) return null;
  const socket = new net.Socket({ fd, readable: true, writable: false });
  socket.unref();
  let full = false; // the core's queue had no room: fed again after a delivery
  let ended = false;
  const take = (fed) => {
    if (typeof fed === 'string') {
      deliver(fed);
    } else if (fed !== full) {
      full = fed;
      if (full) socket.pause();
      else socket.resume();
    }
  };
  const end = (error) => {
    if (ended) return;
    ended = true;
    take(conn.endStdout(error));
  };
  socket.on('data', (chunk) => take(conn.feedStdout(chunk)));
  socket.on('end', () => end(null));
  socket.on('error', (err) => {
    end(String(err?.message ?? err));
    socket.destroy();
  });
  return {
    /** A batch arrived through onBatch: what waited for room may go now. */
    delivered() {
      take(conn.feedStdout(EMPTY));
    },
    ref(on) {
      if (on) socket.ref();
      else socket.unref();
    },
    /** The agent is gone: whatever still holds its stdout is not read. */
    stop() {
      socket.destroy();
    },
  };
}

module.exports = { readStdoutHere };
