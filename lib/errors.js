'use strict';

/**
 * Every error this package produces: a plain `Error` with a stable `code`.
 *
 * | code | when | extra fields |
 * |---|---|---|
 * | ERR_ACP_RPC | the agent answered with a JSON-RPC error | rpcCode, data, method |
 * | ERR_ACP_SPAWN | the agent could not be started | errno, command |
 * | ERR_ACP_CLOSED | the agent exited (or was closed) before answering | exitCode, signal, stderrTail, reason, method |
 * | ERR_ACP_TIMEOUT | no answer within the timeout | method, timeoutMs |
 * | ERR_ACP_PROTOCOL | the agent broke the protocol (e.g. wrong protocolVersion) | method, result |
 * | ERR_ACP_ABORTED | the caller's AbortSignal fired | method |
 * | ERR_ACP_BACKPRESSURE | the agent is not reading its stdin and the write queue is full | |
 * | ERR_ACP_INVALID_ARGUMENT | a call was made with arguments that cannot be sent | |
 * | ERR_ACP_NATIVE_BINDING | the native binary could not be loaded | platform, triple, tried |
 */
class AcpError extends Error {
  constructor(code, message, fields) {
    super(message);
    this.name = 'AcpError';
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
function fromLocalFailure(failure) {
  return new AcpError(failure.code, failure.message, failure);
}

const PREFIX = /^(ERR_ACP_[A-Z_]+): ([\s\S]*)$/;

/** A native exception ("ERR_ACP_X: message") → AcpError; anything else unchanged. */
function fromNativeError(err, extra) {
  const match = PREFIX.exec(err?.message ?? '');
  if (!match) return err;
  const fields = { ...extra };
  let message = match[2];
  const errno = / \[errno=([A-Z]+)\]$/.exec(message);
  if (errno) {
    fields.errno = errno[1];
    message = message.slice(0, errno.index);
  }
  return new AcpError(match[1], message, fields);
}

function abortError(method, reason) {
  return new AcpError('ERR_ACP_ABORTED', `${method} was aborted`, { method, cause: reason });
}

module.exports = { AcpError, RpcError, fromRpcError, fromLocalFailure, fromNativeError, abortError };
