'use strict';

// Argument checks for the public calls. Each throws ERR_ACP_INVALID_ARGUMENT
// naming the argument; the calls turn that into a rejection (a public call
// never throws synchronously, see `rejecting` in client.js).

const path = require('node:path');
const { invalidArgument } = require('./errors.js');

const U32_MAX = 0xffff_ffff;

function string(name, v) {
  if (typeof v !== 'string' || v === '') throw invalidArgument(name, 'must be a non-empty string');
  return v;
}

function object(name, v) {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) throw invalidArgument(name, 'must be an object');
  return v;
}

function optionalObject(name, v) {
  return v === undefined ? undefined : object(name, v);
}

function fn(name, v) {
  if (typeof v !== 'function') throw invalidArgument(name, 'must be a function');
  return v;
}

/** A timeout in ms: a finite number ≥ 0 (0 = none), capped to what the core takes. */
function timeout(name, v) {
  if (v === undefined) return undefined;
  if (typeof v !== 'number' || Number.isNaN(v) || v < 0)
    throw invalidArgument(name, 'must be a number of milliseconds ≥ 0');
  return Number.isFinite(v) ? Math.min(U32_MAX, Math.floor(v)) : 0;
}

/** An integer count or size from `min` to 2³²−1 (what the core takes), or undefined. */
function size(name, v, min = 0) {
  if (v === undefined) return undefined;
  if (!Number.isInteger(v) || v < min || v > U32_MAX)
    throw invalidArgument(name, `must be an integer from ${min} to ${U32_MAX}`);
  return v;
}

/** The longest delay setTimeout keeps (a longer one fires after 1 ms). */
const TIMER_MAX = 2 ** 31 - 1;

/** A timer delay in ms, 0 to 2³¹−1, or undefined. */
function timerMs(name, v) {
  if (v === undefined) return undefined;
  if (typeof v !== 'number' || !Number.isFinite(v) || v < 0 || v > TIMER_MAX)
    throw invalidArgument(name, `must be a number from 0 to ${TIMER_MAX}`);
  return v;
}

function signal(name, v) {
  if (v === undefined) return undefined;
  if (
    v === null ||
    typeof v !== 'object' ||
    typeof v.aborted !== 'boolean' ||
    typeof v.addEventListener !== 'function'
  ) {
    throw invalidArgument(name, 'must be an AbortSignal');
  }
  return v;
}

/** Per-call options `{timeoutMs, signal}`. */
function callOptions(v) {
  if (v === undefined) return {};
  object('options', v);
  return { timeoutMs: timeout('options.timeoutMs', v.timeoutMs), signal: signal('options.signal', v.signal) };
}

/** JSON text of `params` (undefined stays absent); circular or BigInt values are refused. */
function json(name, v) {
  if (v === undefined) return undefined;
  let text;
  try {
    text = JSON.stringify(v);
  } catch (err) {
    throw invalidArgument(name, `cannot be sent as JSON: ${err.message}`);
  }
  if (text === undefined) throw invalidArgument(name, 'cannot be sent as JSON');
  return text;
}

function absolutePath(name, v) {
  string(name, v);
  if (!path.isAbsolute(v)) throw invalidArgument(name, `must be an absolute path (got ${JSON.stringify(v)})`);
  return v;
}

module.exports = {
  string,
  object,
  optionalObject,
  fn,
  timeout,
  size,
  timerMs,
  signal,
  callOptions,
  json,
  absolutePath,
  U32_MAX,
};
