'use strict';

/**
 * Every error this package produces: a plain `Error` with a stable `code`.
 *
 * | code | when | extra fields |
 * |---|---|---|
 * | ERR_ACP_RPC | the agent answered with a JSON-RPC error | rpcCode, data, method |
 * | ERR_ACP_SPAWN | the agent could not be started | errno, command |
 * | ERR_ACP_CLOSED | the agent exited (or was closed) before answering | exitCode, signal, stderrTail, reason, method |
 * | ERR_ACP_TIMEOUT | no answer within the timeout | method, timeoutMs, stderrTail (initialize) |
 * | ERR_ACP_PROTOCOL | the agent broke the protocol (e.g. wrong protocolVersion) | method, result |
 * | ERR_ACP_ABORTED | the caller's AbortSignal fired | method |
 * | ERR_ACP_BACKPRESSURE | the agent is not reading its stdin and the write queue is full | |
 * | ERR_ACP_INVALID_ARGUMENT | a call was made with arguments that cannot be sent | argument |
 * | ERR_ACP_NATIVE_BINDING | the native binary could not be loaded | platform, triple, tried |
 * | ERR_ACP_UNSAFE_PATH | a file to write has a symlink, FIFO, device… at its path | path, fileType |
 * | ERR_ACP_AGENT_INDEX | the agent index is malformed (after fallbacks: see AgentManager.index) | source |
 * | ERR_ACP_AGENT_NOT_FOUND | no agent of that id in the index or the presets | id |
 * | ERR_ACP_AGENT_NOT_INSTALLED | launch with `install: false` of an agent not installed | id, version |
 * | ERR_ACP_AGENT_DOWNLOAD | a download failed, stalled, was cut short, too big, or re-encoded | url, status, bytes, expectedBytes, maxBytes |
 * | ERR_ACP_AGENT_INTEGRITY | a download's SHA-256 is not the index's | url, expected, actual |
 * | ERR_ACP_AGENT_ARCHIVE | an archive breaks an extraction rule (path, link, device, caps) | |
 * | ERR_ACP_AGENT_INSTALL | npm/pip failed, no distribution for this platform, no entry to launch | id, output |
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
