'use strict';

// The client's options: checked once, defaults applied, and shaped into the
// binding's `ConnectionOptions` for each spawn.

const { fsOptions, terminalOptions } = require('./builtins.js');
const vendor = require('./vendor/index.js');
const check = require('./validate.js');
const { invalidArgument } = require('./errors.js');
const { SessionStore } = require('./store.js');

const DEFAULTS = {
  requestTimeoutMs: 60_000,
  initializeTimeoutMs: 30_000,
  promptTimeoutMs: 0,
};

const TIMEOUTS = [
  'requestTimeoutMs',
  'initializeTimeoutMs',
  'promptTimeoutMs',
  'handlerTimeoutMs',
  'closeGraceMs',
  'termGraceMs',
];
const SIZES = [
  'maxLineBytes',
  'stderrTailBytes',
  'maxWriteQueueBytes',
  'batchMaxMessages',
  'batchMaxBytes',
  'inFlightBatches',
  'historySize',
  'maxPendingAgentRequests',
  'maxPendingAgentRequestBytes',
  'builtinJobs',
];

/** Byte-size options may be Infinity: the native side takes a u32. */
function bytesOption(name, v) {
  if (v === undefined) return undefined;
  if (typeof v !== 'number' || Number.isNaN(v) || v < 0)
    throw invalidArgument(`options.${name}`, 'must be a number ≥ 0');
  return Number.isFinite(v) ? Math.min(check.U32_MAX, Math.floor(v)) : check.U32_MAX;
}

function stringEnv(name, env) {
  if (env === undefined) return undefined;
  check.object(name, env);
  return Object.fromEntries(
    Object.entries(env)
      .filter(([, v]) => v !== undefined)
      .map(([k, v]) => [k, String(v)]),
  );
}

/** Check the constructor's options; returns them with defaults applied. */
function normalize(options) {
  if (options === null || typeof options !== 'object') throw invalidArgument('options', 'must be an object');
  check.string('options.command', options.command);
  if (options.args !== undefined && !Array.isArray(options.args))
    throw invalidArgument('options.args', 'must be an array');
  if (options.cwd !== undefined) check.string('options.cwd', options.cwd);
  for (const name of SIZES) check.size(`options.${name}`, options[name]);
  for (const name of ['trace', 'logger', 'onRestart', 'onSessionUpdate', 'onNotification']) {
    if (options[name] !== undefined) check.fn(`options.${name}`, options[name]);
  }
  if (options.handlers !== undefined) {
    check.object('options.handlers', options.handlers);
    for (const [method, h] of Object.entries(options.handlers)) {
      if (h !== undefined) check.fn(`options.handlers[${JSON.stringify(method)}]`, h);
    }
  }
  if (options.restart !== undefined && options.restart !== false) check.object('options.restart', options.restart);
  if (options.store !== undefined && !(options.store instanceof SessionStore)) {
    throw invalidArgument('options.store', 'must be a SessionStore (from SessionStore.open(dir))');
  }
  const normalized = { ...options };
  // An option given as undefined is an option not given: it keeps its default.
  for (const [name, value] of Object.entries(DEFAULTS)) if (normalized[name] === undefined) normalized[name] = value;
  // Checked here, with the defaults in: a bad value is always the caller's.
  for (const name of TIMEOUTS) {
    if (normalized[name] !== undefined) normalized[name] = check.timeout(`options.${name}`, normalized[name]);
  }
  normalized.env = stringEnv('options.env', options.env);
  normalized.builtins = { fs: fsOptions(options.fs), terminals: terminalOptions(options.terminals) };
  normalized.traceMaxPayloadBytes = bytesOption('traceMaxPayloadBytes', options.traceMaxPayloadBytes);
  normalized.historyMaxPayloadBytes = bytesOption('historyMaxPayloadBytes', options.historyMaxPayloadBytes);
  normalized.maxHandlerParamsBytes = bytesOption('maxHandlerParamsBytes', options.maxHandlerParamsBytes);
  normalized.maxResultBytes = bytesOption('maxResultBytes', options.maxResultBytes);
  return normalized;
}

/** The binding's `ConnectionOptions` for one spawn. */
function nativeOptions(o, hostMethods) {
  return {
    command: o.command,
    args: (o.args ?? []).map(String),
    cwd: o.cwd,
    env: o.env,
    clearEnv: o.replaceEnv === true,
    keepDetached: o.keepDetached === true,
    maxLineBytes: o.maxLineBytes,
    stderrTailBytes: o.stderrTailBytes,
    forwardStderr: o.forwardStderr,
    maxWriteQueueBytes: o.maxWriteQueueBytes,
    handlerTimeoutMs: o.handlerTimeoutMs,
    maxPendingAgentRequests: o.maxPendingAgentRequests,
    maxPendingAgentRequestBytes: o.maxPendingAgentRequestBytes,
    maxHandlerParamsBytes: o.maxHandlerParamsBytes,
    maxResultBytes: o.maxResultBytes,
    builtinJobs: o.builtinJobs,
    closeGraceMs: o.closeGraceMs,
    termGraceMs: o.termGraceMs,
    batchMaxMessages: o.batchMaxMessages,
    batchMaxBytes: o.batchMaxBytes,
    inFlightBatches: o.inFlightBatches,
    // Stdout read on this thread while the agent is quiet (lib/host-stdout.js;
    // Linux and macOS). ACP_NATIVE_READ_ON_HOST=0 turns it off, to compare.
    readOnHost: process.platform !== 'win32' && process.env.ACP_NATIVE_READ_ON_HOST !== '0',
    ...o.builtins,
    hostMethods,
    trace: typeof o.trace === 'function',
    traceMaxPayloadBytes: o.traceMaxPayloadBytes,
    historySize: o.historySize,
    historyMaxPayloadBytes: o.historyMaxPayloadBytes,
    cancelledResults: vendor.cancelledResults,
  };
}

module.exports = { normalize, nativeOptions };
