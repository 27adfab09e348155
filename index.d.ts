// acp-native: drive any Agent Client Protocol (ACP) agent over stdio from Node.
//
// The ACP types (params, results, every `sessionUpdate` variant) and the
// method maps (`AgentRequests`, `ClientRequests`, …) are generated from the
// official schema into types/acp.d.ts; this file keys the API by them.
import { EventEmitter } from 'node:events';
import type * as acp from './types/acp';

export type * from './types/acp';
export type { acp };

// ---- session views (types/session-view.d.ts) ----
import type { SessionView, SessionViewOptions } from './types/session-view';
export * from './types/session-view';
export * from './types/sanitize';
export * from './types/agents';
import type { AgentConnectOptions } from './types/agents';
export * from './types/session-store';
import type { Recovery, SessionListing, SessionStore } from './types/session-store';
// ---- end session views ----

/** The ACP protocol version this client speaks (`1`). */
export declare const PROTOCOL_VERSION: number;

/**
 * Load the native binary now, from `file` (an absolute path to an
 * `acp-native.<platform>.node`) or, without it, from the default places
 * (next to the package or the bundle, then the `acp-native-<platform>`
 * package). The binary otherwise loads with the first client; a bundle
 * that moved it calls this first. The choice is this package copy's only
 * (not process-wide). Returns the path loaded. Throws `ERR_ACP_NATIVE_BINDING`
 * naming every place tried, or `ERR_ACP_INVALID_ARGUMENT` when another file
 * is already loaded.
 */
export declare function loadNativeBinding(file?: string): string;

/**
 * Whether `result` (what one of the client's calls resolved with) came
 * cut: it was over `maxResultBytes`, and holds `$omitted` markers.
 */
export declare function resultCut(result: unknown): boolean;
/**
 * The agent's full result text of a cut `result` (parse it off the hot
 * path, or not at all); `undefined` when `result` is whole. Kept as long
 * as `result` is.
 */
export declare function rawResult(result: unknown): string | undefined;

/** Stable error codes; see {@link AcpError}. */
export type AcpErrorCode = AcpError['code'];

/**
 * Codes only `status().lastError` carries, never thrown: one of the host's
 * callbacks threw or rejected (`ERR_ACP_HANDLER`), or something failed
 * without a code (`ERR_ACP_UNKNOWN`).
 */
export type AcpStatusOnlyErrorCode = 'ERR_ACP_HANDLER' | 'ERR_ACP_UNKNOWN';

interface AcpErrorBase extends Error {
  readonly name: 'AcpError';
  /** The request's method, when the error belongs to one call. */
  readonly method?: string;
}

/** The agent answered with a JSON-RPC error. */
export interface AcpRpcError extends AcpErrorBase {
  readonly code: 'ERR_ACP_RPC';
  readonly method: string;
  /** The JSON-RPC error code (e.g. -32601, -32000); absent if the agent sent none. */
  readonly rpcCode: number | undefined;
  /** The JSON-RPC error's `data`. */
  readonly data?: unknown;
}
/** The agent could not be started. */
export interface AcpSpawnError extends AcpErrorBase {
  readonly code: 'ERR_ACP_SPAWN';
  /** `ENOENT`, `EACCES`, `EINVAL` (an argument that cannot be passed, e.g. a line break to a Windows `.cmd`/`.bat`), … */
  readonly errno: string;
  readonly command: string;
}
/** The agent exited or was closed before answering; every later call. */
export interface AcpClosedError extends AcpErrorBase, Partial<ExitInfo> {
  readonly code: 'ERR_ACP_CLOSED';
  /**
   * A failed `initialize()` (exit, closed stdout, or a timeout): the first
   * lines (up to 5, 200 characters each) the agent printed on stdout that
   * were not JSON-RPC, e.g. a usage message. Also quoted in `message`.
   */
  readonly stdoutHead?: string[];
}
/** No answer within the timeout. */
export interface AcpTimeoutError extends AcpErrorBase {
  readonly code: 'ERR_ACP_TIMEOUT';
  readonly method: string;
  readonly timeoutMs: number;
  /** A timed-out `initialize()`: the end of the agent's stderr (the agent is killed). */
  readonly stderrTail?: string;
  /** A timed-out `initialize()`: the first non-JSON lines the agent printed on stdout (see {@link AcpClosedError.stdoutHead}). */
  readonly stdoutHead?: string[];
}
/** The agent broke the protocol, e.g. answered `initialize` with another protocolVersion. */
export interface AcpProtocolError extends AcpErrorBase {
  readonly code: 'ERR_ACP_PROTOCOL';
  readonly result?: unknown;
}
/** The call's `AbortSignal` fired. */
export interface AcpAbortedError extends AcpErrorBase {
  readonly code: 'ERR_ACP_ABORTED';
}
/** The agent does not read its stdin and `maxWriteQueueBytes` are already queued. */
export interface AcpBackpressureError extends AcpErrorBase {
  readonly code: 'ERR_ACP_BACKPRESSURE';
}
/** A call cannot be made as given; `argument` names the culprit (e.g. `params.cwd`). */
export interface AcpInvalidArgumentError extends AcpErrorBase {
  readonly code: 'ERR_ACP_INVALID_ARGUMENT';
  readonly argument?: string;
}
/** The native binary could not be loaded (first client, or `loadNativeBinding`); see docs/bundling.md. */
export interface AcpNativeBindingError extends AcpErrorBase {
  readonly code: 'ERR_ACP_NATIVE_BINDING';
  /** This process's platform, e.g. `linux-x64-gnu`. */
  readonly platform: string;
  /** Its Rust target, e.g. `x86_64-unknown-linux-gnu`; absent when no prebuilt binary exists for it. */
  readonly triple?: string;
  /** Every place looked, in order, and why it did not load. */
  readonly tried: ReadonlyArray<{ where: string; file?: string; reason: string }>;
}

/**
 * A file the package writes (`saveHistory`) has something other than a
 * regular file at its path: nothing was written, and the path was never
 * opened or followed.
 */
export interface AcpUnsafePathError extends AcpErrorBase {
  readonly code: 'ERR_ACP_UNSAFE_PATH';
  readonly path: string;
  readonly fileType: 'symlink' | 'fifo' | 'device' | 'directory' | 'socket' | 'other';
}

/** The agent store's failures (AgentManager, `connect({ agent })`); see docs/agents-manager.md. */
export interface AcpAgentError extends AcpErrorBase {
  readonly code:
    | 'ERR_ACP_AGENT_INDEX'
    | 'ERR_ACP_AGENT_NOT_FOUND'
    | 'ERR_ACP_AGENT_NOT_INSTALLED'
    | 'ERR_ACP_AGENT_DOWNLOAD'
    | 'ERR_ACP_AGENT_INTEGRITY'
    | 'ERR_ACP_AGENT_ARCHIVE'
    | 'ERR_ACP_AGENT_INSTALL';
  readonly id?: string;
  readonly version?: string;
  /** The URL without credentials or query. */
  readonly url?: string;
  readonly status?: number;
  /** ERR_ACP_AGENT_INTEGRITY: the SHA-256 the index gave and the one downloaded (lower-case hex). */
  readonly expected?: string;
  readonly actual?: string;
  /** ERR_ACP_AGENT_INSTALL: the tail of npm's or pip's output. */
  readonly output?: string;
}

/**
 * A session store error (docs/sessions-store.md): the store file is not an
 * SQLite database or is damaged (CORRUPT), is another program's (FOREIGN),
 * is from a newer acp-native (NEWER); another process held the write lock
 * too long (BUSY); the disk is full (FULL: the batch is kept and retried,
 * what was committed is intact); no such stored session (NOT_FOUND); the
 * store is closed (CLOSED); any other I/O failure (IO).
 */
export interface AcpStoreError extends AcpErrorBase {
  readonly code: 'ERR_ACP_STORE_CORRUPT';
}
export interface AcpStoreForeignError extends AcpErrorBase {
  readonly code: 'ERR_ACP_STORE_FOREIGN';
}
export interface AcpStoreNewerError extends AcpErrorBase {
  readonly code: 'ERR_ACP_STORE_NEWER';
}
export interface AcpStoreBusyError extends AcpErrorBase {
  readonly code: 'ERR_ACP_STORE_BUSY';
}
export interface AcpStoreFullError extends AcpErrorBase {
  readonly code: 'ERR_ACP_STORE_FULL';
}
export interface AcpStoreNotFoundError extends AcpErrorBase {
  readonly code: 'ERR_ACP_STORE_NOT_FOUND';
}
export interface AcpStoreClosedError extends AcpErrorBase {
  readonly code: 'ERR_ACP_STORE_CLOSED';
}
export interface AcpStoreIoError extends AcpErrorBase {
  readonly code: 'ERR_ACP_STORE_IO';
}

/**
 * Every error this package throws or rejects with: switch on `code` and
 * the fields narrow.
 *
 * ```ts
 * try { await client.prompt({ sessionId, prompt: 'hi' }); }
 * catch (e) {
 *   if (e instanceof AcpError && e.code === 'ERR_ACP_RPC') console.log(e.rpcCode, e.data);
 * }
 * ```
 */
export type AcpError =
  | AcpRpcError
  | AcpSpawnError
  | AcpClosedError
  | AcpTimeoutError
  | AcpProtocolError
  | AcpAbortedError
  | AcpBackpressureError
  | AcpInvalidArgumentError
  | AcpNativeBindingError
  | AcpUnsafePathError
  | AcpAgentError
  | AcpStoreError
  | AcpStoreForeignError
  | AcpStoreNewerError
  | AcpStoreBusyError
  | AcpStoreFullError
  | AcpStoreNotFoundError
  | AcpStoreClosedError
  | AcpStoreIoError;
export declare const AcpError: {
  new (code: AcpErrorCode, message: string, fields?: Record<string, unknown>): AcpError;
  readonly prototype: AcpError;
};

/**
 * Throw (or reject with) this from a request handler to answer the agent
 * with this JSON-RPC error; it is no fault. A permission or elicitation
 * request always gets an outcome instead (`cancelled`, `cancel`): agents
 * take an error there as a broken turn. Anything else thrown is a fault of the host: it is reported
 * (`handlerError`) and the agent gets -32603 without its message (a
 * permission request: `cancelled`; an elicitation: `cancel`).
 */
export declare class RpcError extends Error {
  constructor(rpcCode: number, message: string, data?: unknown);
  readonly rpcCode: number;
  readonly data?: unknown;
}

/** How the agent ended. */
export interface ExitInfo {
  exitCode: number | null;
  signal: string | null;
  /** The last bytes the agent wrote to stderr (size: `stderrTailBytes`). */
  stderrTail: string;
  /** `exited` (on its own), `closed` (`close()`), `killed` (`kill()`/host exit), `stdout-closed`. */
  reason: 'exited' | 'closed' | 'killed' | 'stdout-closed';
  /**
   * What went wrong with the process that guards the agent's tree (Linux;
   * `null` when nothing did). See docs/process-model.md.
   */
  reaper: ReaperTrouble | null;
}

/**
 * `stopped`/`unresponsive`: the reaper did not act on a kill (stopped, as
 * by the agent), so the host killed the tree itself: nothing survived.
 * `killed`: someone (typically the agent) killed the reaper; the agent
 * died with it, but what it started was left to the system: `escaped`
 * lists the live processes that may be those (found by session, group and
 * recent orphaning; never signalled, may include unrelated processes).
 */
export type ReaperTrouble =
  | { state: 'stopped' | 'unresponsive' }
  | { state: 'killed'; signal: string; escaped: { pid: number; command: string }[] };

/** Per-call options. */
export interface CallOptions {
  /**
   * Give up after this many ms (0 = never): rejects ERR_ACP_TIMEOUT and
   * cancels on the wire like `signal` does.
   */
  timeoutMs?: number;
  /**
   * Give up when it aborts: rejects ERR_ACP_ABORTED and sends
   * `$/cancel_request` (a prompt also `session/cancel`). The agent's late
   * answer is traced, not reported as a protocol error.
   */
  signal?: AbortSignal;
}

/** Passed to every request handler. */
export interface HandlerContext<M extends string = string> {
  /** Aborted when the answer is no longer wanted: the turn was cancelled,
   * the agent withdrew the request, the handler timed out, or the agent exited. */
  signal: AbortSignal;
  method: M;
  /** The agent's request id, exactly as sent (agentao: `"srv_<hex>"`). */
  requestId: string | number;
  /**
   * The params were over `maxHandlerParamsBytes` and reach the handler cut
   * (`{ $omitted: 'size', bytes }` markers in place of what did not fit).
   */
  paramsCut: boolean;
  /**
   * The agent's params as JSON text, whole (parse them yourself, off the
   * hot path if they are big). Throws `ERR_ACP_CLOSED` once the request was
   * answered, cancelled or timed out: the full text is kept only while it waits.
   */
  rawParams(): string;
}

/** Extension methods start with an underscore (ACP extensibility). */
export type ExtensionMethod = `_${string}`;

/** What a handler may return for `R`: an empty result (only `_meta`) may be omitted. */
type HandlerReturn<E extends { result: unknown; empty: boolean }> = E['empty'] extends true
  ? E['result'] | void | null
  : E['result'];

/** A request handler: a value or a Promise of it. */
export type RequestHandler<P = unknown, R = unknown, M extends string = string> = (
  params: P,
  ctx: HandlerContext<M>,
) => R | Promise<R>;

/** The handler of a known agent → client request. */
export type ClientRequestHandler<M extends keyof acp.ClientRequests> = RequestHandler<
  acp.ClientRequests[M]['params'],
  HandlerReturn<acp.ClientRequests[M]>,
  M
>;

/** Extension handlers in `handlers`: annotate `params` with your type, or narrow the `unknown`. */
type ExtensionHandler = {
  // A method signature is bivariant in its parameter: `(p: MyParams) => …` fits.
  bivariant(params: unknown, ctx: HandlerContext): unknown;
}['bivariant'];

/**
 * Handlers by wire method. Known ACP methods are typed from the schema (a
 * misspelt one is an error); extension methods (`_vendor/…`) take any
 * handler. The methods present decide the `clientCapabilities` sent by
 * `initialize()` (fs flags, `terminal` when all five terminal methods are
 * handled, `elicitation.form`).
 *
 * A handler that throws (or rejects with) an {@link RpcError} answers with
 * that error (a permission or elicitation request: `cancelled`, `cancel`,
 * not reported). If it throws anything else, rejects,
 * returns something invalid or outlives `handlerTimeoutMs`, that is a
 * fault (reported as `handlerError`) and the agent still gets an answer:
 * `session/request_permission` `{outcome:{outcome:"cancelled"}}`,
 * `elicitation/create` `{action:"cancel"}`, other methods -32603.
 * A request without a handler is answered -32601 (a permission request:
 * cancelled).
 */
export type Handlers = { [M in keyof acp.ClientRequests]?: ClientRequestHandler<M> } & {
  [M in ExtensionMethod]?: ExtensionHandler;
};

/** A notification handler; a returned Promise holds later batches (backpressure), any other value is ignored. */
export type NotificationHandler<P = unknown, M extends string = string> = (
  params: P,
  message: { jsonrpc: '2.0'; method: M; params: P },
) => unknown;

/** agentao's `_agentao.cn/ask_user` (see lib/vendor/agentao.js): answer `{outcome: 'answered', text}` or `{outcome: 'cancelled'}`. */
export interface AgentaoAskUserRequest {
  sessionId: string;
  question: string;
  [k: string]: unknown;
}
export type AgentaoAskUserResponse = { outcome: 'answered'; text: string } | { outcome: 'cancelled' };

/**
 * Built-in `fs/read_text_file` and `fs/write_text_file`, answered in the
 * native core (off the JS thread). Every path must resolve, symlinks
 * followed, inside one of `roots`; escapes (`..`, absolute paths elsewhere,
 * symlinks pointing out, device files) are refused with JSON-RPC -32602
 * (`data.reason: 'outsideRoots'`). See docs/builtins.md, "Security model".
 */
export interface FsOptions {
  /** Directories the agent may read and write under. Default: the `cwd` and `additionalDirectories` of the session the request names (from `newSession`/`loadSession`/`resumeSession`). Relative entries are resolved against `process.cwd()`. */
  roots?: string[];
  /** Largest content read (whole file, or the `line`/`limit` window) or written, in bytes. Default 10 MiB. */
  maxFileBytes?: number;
  /** Serve reads only: `fs/write_text_file` is left to your handler (or answered -32601) and not advertised. */
  readOnly?: boolean;
  /** Bytes a read may scan to reach its `line` (skipped lines included); beyond, it is refused (`data.reason: 'scanLimit'`). Default 256 MiB. */
  maxScanBytes?: number;
}

/**
 * Built-in `terminal/*`, run as Zed runs them: a `command` with `args` is a
 * program started directly (no shell sees its arguments); a `command`
 * alone is a command line run by the shell (`/bin/sh -c` on Unix,
 * `cmd.exe /d /s /c` on Windows) unless `shell: false`. Each terminal is
 * its own process tree, stdout and stderr captured together, killed on
 * `terminal/release` and when the client closes, is killed or the host
 * exits. A terminal's cwd must lie inside `roots`; the command itself is
 * any code the agent sends, running as your user (docs/terminals.md).
 */
export interface TerminalOptions {
  /** Directories a terminal's cwd must lie in. Default: the session's `cwd` (also the default cwd) and `additionalDirectories`. */
  roots?: string[];
  /** Terminals created and not yet released, at most; more are refused (`data.reason: 'tooManyTerminals'`). Default 32. */
  maxTerminals?: number;
  /** Output kept per terminal when the agent sends no `outputByteLimit`. Default 1 MiB. */
  defaultOutputByteLimit?: number;
  /** Cap on the `outputByteLimit` an agent may ask for. Default 16 MiB. */
  maxOutputByteLimit?: number;
  /** Output all open terminals keep together: a new terminal's limit is cut to what is left, and refused (`data.reason: 'outputBudget'`) when nothing is. Default 64 MiB. */
  maxTotalOutputBytes?: number;
  /** Variables set for every command, over `process.env`; the request's `env` goes on top. */
  env?: Record<string, string | undefined>;
  /**
   * Run a `command` sent without `args` through the shell, as Zed does
   * (pipes, redirections, `&&`, expansions). `false`: such a line is
   * refused (-32602, `data.reason: 'shellDisabled'`); a bare program name
   * (`pwd`) still runs directly. Default true.
   */
  shell?: boolean;
}

export interface AcpClientOptions {
  /** The agent's executable, run directly (no shell). Example: `agentao`. */
  command: string;
  args?: string[];
  /** Working directory of the agent process. */
  cwd?: string;
  /** Variables merged over `process.env` (or replacing it, see `replaceEnv`). */
  env?: Record<string, string | undefined>;
  /** Start the agent with only `env`, not the host's environment. */
  replaceEnv?: boolean;
  /**
   * Let processes that left the agent's process tree (`setsid` daemons)
   * outlive the agent and the host. Default `false`: everything the agent
   * started dies with it (Linux; see docs/ARCHITECTURE.md, "The process model").
   */
  keepDetached?: boolean;
  /** Sent in `initialize`; default `{name: 'acp-native', version}`. */
  clientInfo?: acp.Implementation;
  /**
   * Handlers of agent requests, by wire method — the same registrations as
   * {@link AcpClient.onRequest}, given here because they must be known at
   * spawn (a host handler wins over a built-in) and at `initialize()` (they
   * decide the advertised capabilities).
   */
  handlers?: Handlers;
  /** Called for every `session/update`, in wire order. Return a Promise to slow delivery down (backpressure). */
  onSessionUpdate?: NotificationHandler<acp.SessionNotification, 'session/update'>;
  /** Called for every notification (after the per-method handlers). */
  onNotification?: NotificationHandler<unknown, string>;
  /** Default timeout of requests other than `session/prompt`. Default 60000; 0 = none. */
  requestTimeoutMs?: number;
  /** Timeout of `initialize`; on expiry the agent is killed. Default 30000. */
  initializeTimeoutMs?: number;
  /** Timeout of `session/prompt`. Default 0 (none: use `cancel()`). */
  promptTimeoutMs?: number;
  /** How long a handler may take before the agent is answered for it. Default 300000; 0 = none. */
  handlerTimeoutMs?: number;
  /**
   * Agent requests waiting for an answer at once (your handlers and the
   * built-ins together), at most. More are answered at once with JSON-RPC
   * -32603 `data.reason: 'tooManyPendingRequests'`, and a `requestRefused`
   * event is emitted (once per episode). Default 1024.
   */
  maxPendingAgentRequests?: number;
  /** Bytes of agent requests waiting for an answer, at most (one request of any size is always taken). Default 32 MiB. */
  maxPendingAgentRequestBytes?: number;
  /**
   * Params of an agent request bigger than this (by the views' `jsonSize`)
   * reach your request handler cut: arrays, objects and strings beyond the
   * budget become `{ $omitted: 'size', bytes }` markers, while what answers
   * the request (`sessionId`, a permission's `options`, the tool call's id,
   * title, kind and status, …) stays whole. `ctx.paramsCut` says so and
   * `ctx.rawParams()` returns the full params text while the request
   * waits. Default 4 MiB.
   */
  maxHandlerParamsBytes?: number;
  /**
   * The result of one of the client's ACP requests (`initialize`,
   * `session/new`, `session/load`, `session/prompt`, …, also through
   * `request()`) bigger than this (by `jsonSize`) resolves cut: what the
   * host needs (`sessionId`, `stopReason`, `modes`, `configOptions`,
   * `agentCapabilities`, …) stays whole, the rest becomes
   * `{ $omitted: 'size', bytes }` markers. `resultCut(result)` says so and
   * `rawResult(result)` returns the full text for as long as you keep the
   * result. Extension methods' results are never cut. Default 4 MiB.
   */
  maxResultBytes?: number;
  /** Built-in file reads/writes and `terminal/output` replies worked on at once for this agent (off the shared thread); more wait their turn. Default 2. */
  builtinJobs?: number;
  /** `close()`: wait after stdin EOF before SIGTERM. Default 2000. */
  closeGraceMs?: number;
  /** `close()`: wait after SIGTERM before SIGKILL. Default 1000. */
  termGraceMs?: number;
  /** Longest accepted stdout line; longer ones are skipped with a `protocolError` event. Default 64 MiB. */
  maxLineBytes?: number;
  /** stderr bytes kept for crash reports. Default 64 KiB. */
  stderrTailBytes?: number;
  /** Emit `stderr` events. Default true. stderr is always drained. */
  forwardStderr?: boolean;
  /** Bytes queued for an agent that does not read stdin before calls fail. Default 64 MiB. */
  maxWriteQueueBytes?: number;
  /**
   * Opt-in restart policy: when the agent exits on its own (crash, stdout
   * closed; never after `close()`/`kill()`), spawn it again after
   * `backoffMs * 2^(attempt-1)` (capped by `maxBackoffMs`), at most
   * `maxRestarts` times within `windowMs`. Off by default. Calls pending at
   * the crash still reject ERR_ACP_CLOSED; re-initialize in `onRestart`.
   */
  restart?: { maxRestarts?: number; windowMs?: number; backoffMs?: number; maxBackoffMs?: number };
  /**
   * Record this client's sessions in a session store (`SessionStore.open(dir)`):
   * their views (copied off the JS thread), prompts and turn ends. See
   * docs/sessions-store.md.
   */
  store?: SessionStore;
  /** Runs after each automatic restart: re-`initialize()` and reload your sessions here. */
  onRestart?: (client: AcpClient, info: { attempt: number; exit: ExitInfo }) => unknown;
  /** Delivery tuning: messages per batch (default 1024). */
  batchMaxMessages?: number;
  /** Delivery tuning: bytes per batch (default 64 KiB; one larger message still goes alone). */
  batchMaxBytes?: number;
  /** Delivery tuning: batches in flight to JS (default 2). */
  inFlightBatches?: number;
  /**
   * Serve the agent's `fs/*` requests natively (`true` = defaults). Off by
   * default. A handler you register for the same method wins.
   */
  fs?: boolean | FsOptions;
  /**
   * Serve the agent's five `terminal/*` requests natively (`true` =
   * defaults). Off by default. A handler you register for any terminal
   * method takes all five.
   */
  terminals?: boolean | TerminalOptions;
  /**
   * Called with a {@link TraceRecord} for every message in both directions,
   * in wire order (sends in the order they were queued). Off by default;
   * when off nothing is built for it. A throwing callback is reported as
   * `handlerError` and never breaks the connection.
   */
  trace?: (record: TraceRecord) => void;
  /** Payload bytes a live trace record carries (default 65536; `Infinity` for whole lines). */
  traceMaxPayloadBytes?: number;
  /** Wire messages kept for {@link AcpClient.history} (default 2000; 0 keeps none). */
  historySize?: number;
  /** Payload bytes each history record keeps (default 4096). */
  historyMaxPayloadBytes?: number;
  /**
   * Receives the native core's log records about this client's agent
   * (spawn, stop sequence, timeouts, protocol errors). The addon itself
   * never writes to stdout or stderr.
   */
  logger?: (record: LogRecord) => void;
  /** The most verbose level passed to `logger` (default `'info'`). */
  logLevel?: LogLevel;
}

/** One wire message, as seen by `trace` and kept by `history()`. */
export interface TraceRecord {
  /** Order of the message on this connection, from 1. */
  seq: number;
  /** When it crossed the wire: ms since the Unix epoch (sub-ms precision). */
  time: number;
  direction: 'send' | 'receive';
  /** `error` is a response carrying a JSON-RPC error; `invalid` a line that is not a JSON-RPC message. */
  kind: 'request' | 'response' | 'error' | 'notification' | 'invalid';
  /** The method; for responses, the method of the request they answer. */
  method?: string;
  /** The JSON-RPC id exactly as on the wire. */
  id?: string | number;
  /** Size of the line in bytes (without the newline). */
  bytes: number;
  /** Responses: time since the matching request crossed the wire. */
  durationMs?: number;
  /** The line as text, cut to the configured size on a character boundary. */
  payload: string;
  /** Present (and true) when `payload` was cut. */
  truncated?: true;
}

export type LogLevel = 'off' | 'error' | 'warn' | 'info' | 'debug' | 'trace';

/** A log record from the native core. */
export interface LogRecord {
  level: Exclude<LogLevel, 'off'>;
  /** The Rust module it came from, e.g. `acp_core::connection::supervisor`. */
  target: string;
  message: string;
  /** Structured fields; `pid` names the agent process it is about. */
  fields: Record<string, string | number | boolean>;
  time: number;
}

/** Lifecycle states, see {@link AcpClient.state}. */
export type ClientState = 'starting' | 'initializing' | 'ready' | 'busy' | 'closing' | 'closed' | 'failed';

/** What {@link AcpClient.status} returns. */
export interface ClientStatus {
  state: ClientState;
  pid: number;
  protocolVersion: number | null;
  agentInfo: acp.Implementation | null;
  agentCapabilities: acp.AgentCapabilities | null;
  /** Sessions opened (new/load/resume) and not closed or deleted, on this agent process. */
  sessions: string[];
  promptsInFlight: number;
  /** Our requests still waiting for the agent, by method. */
  pendingRequests: Record<string, number>;
  /** The agent's requests still waiting for a handler, by method. */
  pendingAgentRequests: Record<string, number>;
  messagesIn: number;
  messagesOut: number;
  bytesIn: number;
  bytesOut: number;
  noiseLines: number;
  /** stderr chunks not emitted as `stderr` events because the host was behind (the tail still has them). */
  stderrDropped: number;
  /** Agent requests refused because too many were waiting (`maxPendingAgentRequests`). */
  refusedAgentRequests: number;
  /** Automatic restarts so far. */
  restarts: number;
  /** The last failure: its `code` an {@link AcpErrorCode} or an {@link AcpStatusOnlyErrorCode} (or a foreign error's own). */
  lastError: { code: string; message: string; time: number } | null;
  exit: ExitInfo | null;
}

/**
 * Process-wide logger for the native core's records about every client
 * (records about one agent also go to that client's `logger`).
 * `setLogger(null)` removes it.
 */
export declare function setLogger(logger: ((record: LogRecord) => void) | null, options?: { level?: LogLevel }): void;

export interface Disposable {
  dispose(): void;
}

export interface AcpClientEvents {
  /** The current agent process is gone; every pending call's Promise has settled before (the handlers attached to it have run). */
  exit: [info: ExitInfo];
  /** One line the agent wrote to stderr, with its `\n` (however it was written: several lines in one write are several events); a last line without one comes as it is, a line over 64 KiB in pieces. */
  stderr: [text: string];
  /** A non-JSON line on stdout (a banner, a stray print). Never answered. */
  protocolNoise: [noise: { line: string; count: number }];
  /** A line that is JSON but not usable JSON-RPC, an oversized line, a response to an id we never sent. */
  protocolError: [
    error: {
      kind: 'badJson' | 'batch' | 'notJsonRpc' | 'oversized' | 'unknownResponse';
      message: string;
      line: string;
    },
  ];
  /**
   * Agent requests are being refused: `maxPendingAgentRequests` (or
   * `maxPendingAgentRequestBytes`) are waiting for an answer. Emitted once
   * per episode (again after a request was taken in); `refusedTotal` counts
   * every refusal so far.
   */
  requestRefused: [
    info: {
      method: string;
      refusedTotal: number;
      data: {
        reason: 'tooManyPendingRequests';
        pendingRequests?: number;
        pendingBytes?: number;
        maxPendingRequests: number;
        maxPendingBytes: number;
      };
    },
  ];
  /** Reading the agent's stdout or stderr failed (not EOF): the stream is no longer read. */
  readError: [info: { stream: 'stdout' | 'stderr'; message: string }];
  /** The restart policy started a new agent process. */
  restart: [info: { attempt: number; exit: ExitInfo }];
  /** `recover()` started on a stored session. */
  recovering: [info: { storedId: string }];
  /** `recover()` continued it: how, and the agent's session id now. */
  recovered: [recovery: Recovery];
  /** `recover()` could not continue it (the promise rejects with the same error). */
  recoveryFailed: [info: { storedId: string; error: unknown }];
  /** The restart policy gave up (budget spent, or the respawn failed). */
  restartFailed: [info: { reason: string; exit: ExitInfo; error?: unknown }];
  /**
   * A host callback threw or rejected — a handler, an event listener,
   * `trace`, `logger`, `onRestart`. Also in `status().lastError`
   * (`ERR_ACP_HANDLER`) and logged; without a listener, a process warning.
   * `where` is the method, `'<event> listener'`, `'trace'`, `'logger'`…
   */
  handlerError: [error: unknown, where: string];
  /**
   * The lifecycle state changed: `starting → initializing → ready ⇄ busy →
   * closing → closed`, or `failed` (unexpected exit, failed initialize);
   * a restart goes back to `starting`.
   */
  state: [change: { state: ClientState; previous: ClientState; reason?: string }];
}

type Listener<E extends keyof AcpClientEvents> = (...args: AcpClientEvents[E]) => void;

/** Params of the session-opening calls: `cwd` (absolute) defaults to `process.cwd()`, `mcpServers` to `[]`. */
type Opening<P extends { cwd: string }> = Omit<P, 'cwd' | 'mcpServers'> &
  Partial<Pick<P, Extract<keyof P, 'cwd' | 'mcpServers'>>>;

/** Result of a known client → agent request. */
type ResultOf<M extends keyof acp.AgentRequests> = acp.AgentRequests[M]['result'];

/** Not a known method (so the loose overload cannot swallow a known one). */
type Unknown<M extends string, Known extends string> = M extends Known ? never : M;

/**
 * A connection to one ACP agent process.
 *
 * ```ts
 * import { AcpClient } from 'acp-native';
 * const client = new AcpClient({ command: 'agentao', args: ['--acp', '--stdio'],
 *   handlers: { 'session/request_permission': async () => ({ outcome: { outcome: 'cancelled' } }) } });
 * await client.initialize();
 * const { sessionId } = await client.newSession({ cwd: '/abs/project' });
 * const { stopReason } = await client.prompt({ sessionId, prompt: 'hello' });
 * await client.close();
 * ```
 *
 * The constructor spawns the agent (throws ERR_ACP_SPAWN if it cannot, and
 * ERR_ACP_INVALID_ARGUMENT for bad options). Every other call that returns
 * a Promise rejects — never throws — on bad arguments. Everything the agent
 * sends is delivered in wire order: when a call's Promise resolves, every
 * notification sent before its response has already reached your handlers.
 */
export declare class AcpClient extends EventEmitter {
  constructor(options: AcpClientOptions);
  /**
   * Spawn + `initialize()`; kills the agent if initialize fails. With
   * `{ agent: 'id', agents }` the registry id is resolved (and installed)
   * by an {@link AgentManager} first.
   */
  static connect(
    options: AcpClientOptions | AgentConnectOptions,
    initializeParams?: Partial<acp.InitializeRequest>,
  ): Promise<AcpClient>;

  readonly pid: number;
  /** The `initialize` result, once known. */
  readonly agent: acp.InitializeResponse | null;
  /** The exit report once the current agent process is gone, else `null`. */
  readonly exitInfo: ExitInfo | null;
  /**
   * Resolves with the last exit report once the client is finished:
   * `close()`/`kill()`/`dispose()`, or an exit the restart policy does not
   * (or no longer) restart, after the `exit` event (so after every pending
   * call's Promise has settled). Never rejects.
   */
  readonly closed: Promise<ExitInfo>;
  /** Non-JSON stdout lines seen so far. */
  readonly noiseLines: number;
  /** Built-in terminals the agent created and has not released. */
  readonly openTerminals: number;
  /** The lifecycle state (the `state` event reports each change). */
  readonly state: ClientState;

  /** A snapshot for status panels and bug reports: state, agent, sessions, pending requests by method, counters, last error. */
  status(): ClientStatus;
  /** The last `historySize` wire messages of the current agent process, oldest first. Works with `trace` off. */
  history(): TraceRecord[];
  /**
   * Write `history()` to a file as NDJSON (one record per line); resolves
   * with the record count. Written to a temporary file in the same
   * directory, then renamed over `path`; a symlink, FIFO, device or
   * directory at `path` rejects ERR_ACP_UNSAFE_PATH at once.
   */
  saveHistory(path: string): Promise<number>;

  /** Register (or replace) the handler of an agent → client request. */
  onRequest<M extends keyof acp.ClientRequests>(method: M, handler: ClientRequestHandler<M>): Disposable;
  onRequest<P = unknown, R = unknown>(method: ExtensionMethod, handler: RequestHandler<P, R>): Disposable;
  /** Add a notification handler; `'*'` receives every notification (read `message.method`). */
  onNotification<M extends keyof acp.ClientNotifications>(
    method: M,
    handler: NotificationHandler<acp.ClientNotifications[M], M>,
  ): Disposable;
  onNotification(method: '*', handler: NotificationHandler<unknown, string>): Disposable;
  onNotification<P = unknown>(method: ExtensionMethod, handler: NotificationHandler<P>): Disposable;
  onSessionUpdate(handler: NotificationHandler<acp.SessionNotification, 'session/update'>): Disposable;
  /**
   * One session's `session/update`s as an async iterator. Consumption
   * drives reading: while `highWaterMark` (default 64) updates wait unread,
   * the agent's output is not read further. Ends when `signal` aborts,
   * `closeSession`/`deleteSession` of it succeeds, or the agent exits (after what already arrived), at once on `break`.
   * Tie it to a turn: `prompt(…).finally(() => controller.abort())`.
   */
  updates(
    sessionId: string,
    options?: { signal?: AbortSignal; highWaterMark?: number },
  ): AsyncIterableIterator<acp.SessionNotification>;
  /**
   * A live view of a session, folded in the core (see SessionView); the
   * same view for the same session until closed. Opt-in: sessions without
   * a view cost nothing. Called again while it is open: an option given
   * that differs from the open view's throws ERR_ACP_INVALID_ARGUMENT
   * naming it (`argument: 'options.<name>'`); options left out do not
   * differ.
   */
  session(sessionId: string, options?: SessionViewOptions): SessionView;

  /** Sends protocolVersion 1 and capabilities derived from the handlers and the enabled built-ins; checks the agent's version. */
  initialize(params?: Partial<acp.InitializeRequest>, options?: CallOptions): Promise<acp.InitializeResponse>;
  authenticate(params: acp.AuthenticateRequest, options?: CallOptions): Promise<acp.AuthenticateResponse | null>;
  logout(params?: acp.LogoutRequest, options?: CallOptions): Promise<acp.LogoutResponse | null>;
  newSession(params?: Opening<acp.NewSessionRequest>, options?: CallOptions): Promise<acp.NewSessionResponse>;
  /** History is replayed as `session/update`s before this resolves. */
  loadSession(params: Opening<acp.LoadSessionRequest>, options?: CallOptions): Promise<acp.LoadSessionResponse | null>;
  listSessions(params?: acp.ListSessionsRequest, options?: CallOptions): Promise<acp.ListSessionsResponse>;
  resumeSession(params: Opening<acp.ResumeSessionRequest>, options?: CallOptions): Promise<acp.ResumeSessionResponse>;
  closeSession(params: acp.CloseSessionRequest, options?: CallOptions): Promise<acp.CloseSessionResponse | null>;
  /** With a store, also deletes the stored copy (and sends `session/delete` only if the agent advertises it). */
  deleteSession(
    params: acp.DeleteSessionRequest & { storedId?: string },
    options?: CallOptions,
  ): Promise<acp.DeleteSessionResponse | null>;
  /** With a store: the stored ids of the sessions this client records, by session id. */
  recordedSessions(): Record<string, string>;
  /**
   * Continue a stored session on this initialized client's agent:
   * `session/resume`, else `session/load` (its replay de-duplicated against
   * the stored view), else a new session seeded from the store.
   */
  recover(storedId: string): Promise<Recovery>;
  /** The agent's `session/list` and the store's sessions, merged; each entry says where it is. */
  sessions(params?: { cwd?: string; limit?: number }): Promise<SessionListing[]>;
  /** `session/fork` when the agent has it, else emulated from the store (`emulated: true`). */
  forkSession(params: {
    sessionId: string;
    cwd?: string;
    mcpServers?: acp.McpServer[];
    storedId?: string;
  }): Promise<{ sessionId: string; storedId: string | null; emulated: boolean }>;
  setSessionMode(params: acp.SetSessionModeRequest, options?: CallOptions): Promise<acp.SetSessionModeResponse | null>;
  setSessionConfigOption(
    params: acp.SetSessionConfigOptionRequest,
    options?: CallOptions,
  ): Promise<acp.SetSessionConfigOptionResponse>;
  /**
   * One turn. `prompt` may be a string (one text block). No timeout by
   * default; a timeout or abort also sends `session/cancel`.
   */
  prompt(
    params: Omit<acp.PromptRequest, 'prompt'> & { prompt: acp.ContentBlock[] | string },
    options?: CallOptions,
  ): Promise<acp.PromptResponse>;
  /**
   * Cancel the session's turn: sends `session/cancel` and answers every
   * permission, elicitation and extension request of that session still
   * pending with its cancelled outcome (their handlers' signals abort).
   * Resolves with how many were answered; the turn's `prompt()` then
   * resolves with `stopReason: 'cancelled'`.
   */
  cancel(params: string | acp.CancelNotification): Promise<number>;
  /** A known request, typed from the schema. */
  request<M extends keyof acp.AgentRequests>(
    method: M,
    params: acp.AgentRequests[M]['params'],
    options?: CallOptions,
  ): Promise<ResultOf<M>>;
  /** Any other request (extension `_vendor/…` or unstable methods); the result type is yours to state. */
  request<R = unknown, M extends string = string>(
    method: Unknown<M, keyof acp.AgentRequests>,
    params?: unknown,
    options?: CallOptions,
  ): Promise<R>;
  /** A known notification, typed from the schema. */
  notify<M extends keyof acp.AgentNotifications>(method: M, params: acp.AgentNotifications[M]): Promise<void>;
  notify<M extends string>(method: Unknown<M, keyof acp.AgentNotifications>, params?: unknown): Promise<void>;

  /**
   * Stop the agent: stdin EOF (stdout is still read: agents answer and
   * persist on EOF), then SIGTERM and SIGKILL to its process group after
   * `closeGraceMs` / `termGraceMs`. Resolves with the exit report (the same
   * as `closed`) once every pending call has been rejected ERR_ACP_CLOSED
   * and the handlers attached to those Promises have run.
   */
  close(): Promise<ExitInfo>;
  /** SIGKILL the agent and everything it started (its whole process tree) now. */
  kill(): void;
  /** `close()`, resolving to nothing: for `context.subscriptions` (VS Code) and `await using`. */
  dispose(): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
  /** Keep Node running while this client is open (like `socket.ref()`). */
  ref(): this;
  /** Default: Node may exit while this client is idle; pending calls always keep it alive. */
  unref(): this;

  on<E extends keyof AcpClientEvents>(event: E, listener: Listener<E>): this;
  once<E extends keyof AcpClientEvents>(event: E, listener: Listener<E>): this;
  off<E extends keyof AcpClientEvents>(event: E, listener: Listener<E>): this;
  addListener<E extends keyof AcpClientEvents>(event: E, listener: Listener<E>): this;
  removeListener<E extends keyof AcpClientEvents>(event: E, listener: Listener<E>): this;
  prependListener<E extends keyof AcpClientEvents>(event: E, listener: Listener<E>): this;
}
