'use strict';

// Options of the built-in fs/terminal handlers (see index.d.ts), checked and
// shaped for the native binding.

const path = require('node:path');
const { AcpError } = require('./errors.js');

const U32_MAX = 2 ** 32 - 1;

function invalid(message) {
  return new AcpError('ERR_ACP_INVALID_ARGUMENT', message);
}

function size(name, value) {
  if (value === undefined) return undefined;
  if (!Number.isInteger(value) || value < 0 || value > U32_MAX) {
    throw invalid(`${name} must be an integer from 0 to ${U32_MAX}`);
  }
  return value;
}

/** Bytes a read may scan; may exceed 4 GiB (a safe integer). */
function scanBytes(value) {
  if (value === undefined) return undefined;
  if (!Number.isSafeInteger(value) || value < 0) {
    throw invalid('fs.maxScanBytes must be a non-negative safe integer');
  }
  return value;
}

function roots(name, value) {
  if (value === undefined) return undefined;
  if (!Array.isArray(value) || value.some((r) => typeof r !== 'string' || r === '')) {
    throw invalid(`${name} must be an array of directory paths`);
  }
  // Relative roots mean what they mean to the host, not to the core.
  return value.map((r) => path.resolve(r));
}

function object(name, value) {
  if (value === undefined || value === false || value === null) return undefined;
  if (value === true) return {};
  if (typeof value !== 'object' || Array.isArray(value)) throw invalid(`${name} must be true or an options object`);
  return value;
}

/** `options.fs` → the binding's `FsOptions`, or undefined when off. */
function fsOptions(value) {
  const o = object('fs', value);
  if (!o) return undefined;
  return {
    roots: roots('fs.roots', o.roots),
    maxFileBytes: size('fs.maxFileBytes', o.maxFileBytes),
    readOnly: o.readOnly === undefined ? undefined : Boolean(o.readOnly),
    maxScanBytes: scanBytes(o.maxScanBytes),
  };
}

/** `options.terminals` → the binding's `TerminalOptions`, or undefined when off. */
function terminalOptions(value) {
  const o = object('terminals', value);
  if (!o) return undefined;
  let env;
  if (o.env !== undefined) {
    if (typeof o.env !== 'object' || o.env === null) throw invalid('terminals.env must be an object');
    env = Object.fromEntries(
      Object.entries(o.env)
        .filter(([, v]) => v !== undefined)
        .map(([k, v]) => [k, String(v)]),
    );
  }
  if (o.shell !== undefined && typeof o.shell !== 'boolean') throw invalid('terminals.shell must be a boolean');
  return {
    roots: roots('terminals.roots', o.roots),
    maxTerminals: size('terminals.maxTerminals', o.maxTerminals),
    defaultOutputByteLimit: size('terminals.defaultOutputByteLimit', o.defaultOutputByteLimit),
    maxOutputByteLimit: size('terminals.maxOutputByteLimit', o.maxOutputByteLimit),
    maxTotalOutputBytes: size('terminals.maxTotalOutputBytes', o.maxTotalOutputBytes),
    env,
    shell: o.shell,
  };
}

module.exports = { fsOptions, terminalOptions };
