'use strict';

/**
 * Every error this package produces: a plain `Error` with a stable `code`.
 * The codes and their meanings are defined once, in
 * crates/acp-core/src/vocabulary.rs; docs/error-codes.md lists them with
 * the fields each carries.
 */
class AcpError extends Error {
  /** @type {'AcpError'} */
  name = 'AcpError';

  constructor(code, message, fields) {
    super(message);
    this.code = code;
    if (fields) {
      for (const [k, v] of Object.entries(fields)) {
        if (k !== 'code' && k !== 'message' && v !== undefined) this[k] = v;
      }
    }
  }
}

/** An error a request handler can throw to answer the agent with a specific JSON-RPC error. */
class RpcError extends Error {
  constructor(rpcCode, message, data) {
    super(message);
    this.name = 'RpcError';
    this.rpcCode = rpcCode;
    if (data !== undefined) this.data = data;
  }
}

/** `argument` is the name the caller knows it by, e.g. `params.sessionId`. */
function invalidArgument(argument, message) {
  return new AcpError('ERR_ACP_INVALID_ARGUMENT', `${argument} ${message}`, { argument });
}

/** The agent's JSON-RPC error object → ERR_ACP_RPC. */
function fromRpcError(error, method) {
  const rpcCode = typeof error?.code === 'number' ? error.code : undefined;
  const text = typeof error?.message === 'string' ? error.message : 'unknown error';
  return new AcpError('ERR_ACP_RPC', `${method} failed: ${text} (JSON-RPC ${rpcCode})`, {
    rpcCode,
    data: error?.data,
    method,
  });
}

/** A local failure item from the core (`{code, message, …}`) → AcpError. */
function fromFailure(failure) {
  return new AcpError(failure.code, failure.message, failure);
}

/**
 * An error the binding threw → AcpError. The binding puts the stable code
 * in `err.code` (and a spawn failure's OS error name in `err.cause.message`);
 * anything else (a bug, napi's own checks) passes through unchanged.
 */
function fromNativeError(err, extra) {
  if (err instanceof AcpError) return err; // already ours (e.g. the loader's ERR_ACP_NATIVE_BINDING)
  const code = err?.code;
  if (typeof code !== 'string' || !code.startsWith('ERR_ACP_')) return err;
  const fields = { ...extra };
  if (code === 'ERR_ACP_SPAWN' && typeof err.cause?.message === 'string') fields.errno = err.cause.message;
  return new AcpError(code, err.message, fields);
}

function abortError(method, reason) {
  return new AcpError('ERR_ACP_ABORTED', `${method} was aborted`, { method, cause: reason });
}

module.exports = { AcpError, RpcError, invalidArgument, fromRpcError, fromFailure, fromNativeError, abortError };
