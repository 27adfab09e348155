'use strict';

// The core's log records wait in one native queue per process; the native
// sink only wakes this module, which takes them all and routes each to the
// client whose agent it is about (by pid) and to the process-wide logger
// set with `setLogger`. A client about to forget its agent takes them
// first: the agent's last records come before its exit is reported, but
// the wake-up travels apart from the exit and could come after it.

const { native } = require('./loader.js');

const LEVELS = ['off', 'error', 'warn', 'info', 'debug', 'trace'];

/** pid → the client's { logger, level } */
const byPid = new Map();
/** client → { logger, level, pids } */
const clients = new Map();
let global = null; // { logger, level }
let nativeLevel = 'off';

function rank(level) {
  const r = LEVELS.indexOf(level);
  if (r < 0) throw new RangeError(`unknown log level ${JSON.stringify(level)}; use one of ${LEVELS.join(', ')}`);
  return r;
}

function deliver(entry, record) {
  if (rank(record.level) > rank(entry.level)) return;
  try {
    entry.logger(record);
  } catch (err) {
    // A broken logger must not break the connection, nor log about itself.
    entry.onError?.(err);
  }
}

function route(text) {
  let record;
  try {
    record = JSON.parse(text);
  } catch {
    return;
  }
  const pid = record.fields?.pid;
  const owner = pid === undefined ? undefined : byPid.get(pid);
  if (owner) deliver(owner, record);
  else if (pid === undefined) for (const entry of clients.values()) deliver(entry, record);
  if (global) deliver(global, record);
}

/** Route every record the core has queued. */
function takeRecords() {
  if (nativeLevel === 'off') return;
  for (const text of native.takeLogRecords()) route(text);
}

/** Ask the core for the most verbose level anyone wants. */
function refresh() {
  let want = global ? rank(global.level) : 0;
  for (const entry of clients.values()) want = Math.max(want, rank(entry.level));
  const level = LEVELS[want];
  if (level === nativeLevel) return;
  // Turned off: what waits goes to whoever is left, not to later loggers.
  if (want === 0) takeRecords();
  nativeLevel = level;
  native.setLogSink(want > 0 ? takeRecords : null, level);
}

/**
 * Process-wide logger for the native core's records (all clients).
 * `setLogger(null)` removes it.
 */
function setLogger(logger, options = {}) {
  if (logger !== null && typeof logger !== 'function') throw new TypeError('logger must be a function or null');
  const level = options.level ?? 'info';
  rank(level);
  global = logger ? { logger, level } : null;
  refresh();
}

/**
 * Register a client's logger before its agent is spawned (so the spawn
 * itself is logged), then `attach` each agent pid it gets.
 */
function register(client, logger, level, onError) {
  rank(level);
  if (!clients.has(client)) clients.set(client, { logger, level, onError, pids: new Set() });
  refresh();
}

/** Route records about `pid` to this client's logger (until `forget`). */
function attach(client, pid) {
  const entry = clients.get(client);
  if (!entry) return;
  entry.pids.add(pid);
  byPid.set(pid, entry);
}

function forget(client) {
  const entry = clients.get(client);
  if (!entry) return;
  // What was logged about its agents so far is still theirs.
  takeRecords();
  clients.delete(client);
  for (const pid of entry.pids) if (byPid.get(pid) === entry) byPid.delete(pid);
  refresh();
}

/** A record produced in JS about `client` (e.g. a host callback threw). */
function local(client, record) {
  const full = { time: Date.now(), ...record };
  const entry = clients.get(client);
  if (entry) deliver(entry, full);
  if (global) deliver(global, full);
}

module.exports = { setLogger, register, attach, forget, local, takeRecords, LEVELS };
