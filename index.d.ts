// acp-native: drive any Agent Client Protocol (ACP) agent over stdio from Node.
import { EventEmitter } from 'node:events';
import type * as acp from './types/acp';

export type * from './types/acp';
export type { acp };

// ---- session views (types/session-view.d.ts) ----
import type { SessionView, SessionViewOptions } from './types/session-view';
export * from './types/session-view';
// ---- end session views ----

/** The ACP protocol version this client speaks (`1`). */
export declare const PROTOCOL_VERSION: number;

/** Stable error codes; see {@link AcpError}. */
export type AcpErrorCode =
  | 'ERR_ACP_RPC'
  | 'ERR_ACP_SPAWN'
  | 'ERR_ACP_CLOSED'
  | 'ERR_ACP_TIMEOUT'
  | 'ERR_ACP_PROTOCOL'
  | 'ERR_ACP_ABORTED'
  | 'ERR_ACP_BACKPRESSURE'
  | 'ERR_ACP_INVALID_ARGUMENT';

/**
 * Every error this package throws or rejects with. Switch on `code`.
 *
 * - `ERR_ACP_RPC`: the agent answered with a JSON-RPC error (`rpcCode`, `data`).
 * - `ERR_ACP_SPAWN`: the agent could not be started (`errno`, e.g. `ENOENT`).
 * - `ERR_ACP_CLOSED`: the agent exited or was closed before answering
 *   (`exitCode`, `signal`, `stderrTail`, `reason`).
 * - `ERR_ACP_TIMEOUT`: no answer within the timeout (`timeoutMs`).
 * - `ERR_ACP_PROTOCOL`: the agent broke the protocol, e.g. answered
 *   `initialize` with a protocolVersion other than 1.
 * - `ERR_ACP_ABORTED`: the call's `AbortSignal` fired.
 * - `ERR_ACP_BACKPRESSURE`: the agent does not read its stdin and
 *   `maxWriteQueueBytes` are already queued.
 * - `ERR_ACP_INVALID_ARGUMENT`: the call cannot be sent as given.
 */
export declare class AcpError extends Error {
  readonly name: 'AcpError';
  readonly code: AcpErrorCode;
  /** The request's method, when the error belongs to one call. */
  readonly method?: string;
  /** ERR_ACP_RPC: the JSON-RPC error code (e.g. -32601, -32000). */
  readonly rpcCode?: number;
  /** ERR_ACP_RPC: the JSON-RPC error's `data`. */
  readonly data?: unknown;
  /** ERR_ACP_SPAWN: `ENOENT`, `EACCES`, … */
  readonly errno?: string;
  /** ERR_ACP_CLOSED: the agent's exit code, if it exited. */
  readonly exitCode?: number | null;
  /** ERR_ACP_CLOSED: the signal that ended the agent, e.g. `SIGKILL`. */
  readonly signal?: string | null;
  /** ERR_ACP_CLOSED, or a timed-out `initialize`: the end of the agent's stderr. */
  readonly stderrTail?: string;
  /** ERR_ACP_TIMEOUT: the timeout that expired. */
  readonly timeoutMs?: number;
}

/**
 * Throw this from a request handler to answer the agent with a specific
 * JSON-RPC error (anything else thrown becomes -32603).
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
}

/** Per-call options. */
export interface CallOptions {
  /** Reject with ERR_ACP_TIMEOUT after this many ms; 0 = no timeout. */
  timeoutMs?: number;
  /** Abort the call: rejects with ERR_ACP_ABORTED and sends `$/cancel_request`. */
  signal?: AbortSignal;
}

/** Passed to every request handler. */
export interface HandlerContext {
  /** Aborted when the answer is no longer wanted: the turn was cancelled,
   * the agent withdrew the request, the handler timed out, or the agent exited. */
  signal: AbortSignal;
  method: string;
  /** The agent's request id, as sent. */
  id: string | number;
}

export type RequestHandler<P = any, R = unknown> = (params: P, ctx: HandlerContext) => R | Promise<R>;

/** Typed handlers for the agent → client requests of ACP v1. */
export interface ClientRequestHandlers {
  'session/request_permission': RequestHandler<acp.RequestPermissionRequest, acp.RequestPermissionResponse>;
  'fs/read_text_file': RequestHandler<acp.ReadTextFileRequest, acp.ReadTextFileResponse>;
  'fs/write_text_file': RequestHandler<acp.WriteTextFileRequest, acp.WriteTextFileResponse | null>;
  'terminal/create': RequestHandler<acp.CreateTerminalRequest, acp.CreateTerminalResponse>;
  'terminal/output': RequestHandler<acp.TerminalOutputRequest, acp.TerminalOutputResponse>;
  'terminal/release': RequestHandler<acp.ReleaseTerminalRequest, acp.ReleaseTerminalResponse | null>;
  'terminal/wait_for_exit': RequestHandler<acp.WaitForTerminalExitRequest, acp.WaitForTerminalExitResponse>;
  'terminal/kill': RequestHandler<acp.KillTerminalRequest, acp.KillTerminalResponse | null>;
  'elicitation/create': RequestHandler<acp.CreateElicitationRequest, acp.CreateElicitationResponse>;
  /** agentao's question to the user: answer `{outcome: 'answered', text}` or `{outcome: 'cancelled'}`. */
  '_agentao.cn/ask_user': RequestHandler<{ sessionId: string; question: string; [k: string]: unknown }, { outcome: 'answered'; text: string } | { outcome: 'cancelled' }>;
}

/**
 * Handlers by wire method name. Any other method (extensions start with
 * `_`) may be added too. The methods present decide the
 * `clientCapabilities` sent by `initialize()` (fs flags, `terminal` when all
 * five terminal methods are handled, `elicitation.form`).
 *
 * A handler may return a value or a Promise. If it throws, rejects, returns
 * something invalid or outlives `handlerTimeoutMs`, the agent still gets an
 * answer: `session/request_permission` is answered
 * `{outcome:{outcome:"cancelled"}}`, other methods a JSON-RPC error.
 * A request without a handler is answered -32601.
 */
export type Handlers = Partial<ClientRequestHandlers> & { [method: string]: RequestHandler | undefined };

/**
 * Built-in `fs/read_text_file` and `fs/write_text_file`, answered in the
 * native core (off the JS thread). Every path must resolve, symlinks
 * followed, inside one of `roots`; escapes (`..`, absolute paths elsewhere,
 * symlinks pointing out, device files) are refused with JSON-RPC -32602
 * (`data.reason: 'outsideRoots'`). See the README's security model.
 */
export interface FsOptions {
  /** Directories the agent may read and write under. Default: the `cwd` and `additionalDirectories` of the session the request names (from `newSession`/`loadSession`/`resumeSession`). Relative entries are resolved against `process.cwd()`. */
  roots?: string[];
  /** Largest content read (whole file, or the `line`/`limit` window) or written, in bytes. Default 10 MiB. */
  maxFileBytes?: number;
  /** Serve reads only: `fs/write_text_file` is left to your handler (or answered -32601) and not advertised. */
  readOnly?: boolean;
}

/**
 * Built-in `terminal/*`: commands run directly (never through a shell) in
 * their own process group, stdout and stderr captured together. The group
 * is killed on `terminal/release` and when the client closes, is killed or
 * the host exits. A terminal's cwd must lie inside `roots`; the command
 * itself is any program the agent names, running as your user.
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
  /** Variables set for every command, over `process.env`; the request's `env` goes on top. */
  env?: Record<string, string | undefined>;
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
  /** Sent in `initialize`; default `{name: 'acp-native', version}`. */
  clientInfo?: acp.Implementation;
  handlers?: Handlers;
  /** Called for every `session/update`, in wire order. Return a Promise to slow delivery down (backpressure). */
  onSessionUpdate?: (params: acp.SessionNotification, message: object) => void | Promise<void>;
  /** Called for every notification (after the per-method handlers). */
  onNotification?: (method: string, params: unknown, message: object) => void | Promise<void>;
  /** Default timeout of requests other than `session/prompt`. Default 60000; 0 = none. */
  requestTimeoutMs?: number;
  /** Timeout of `initialize`; on expiry the agent is killed. Default 30000. */
  initializeTimeoutMs?: number;
  /** Timeout of `session/prompt`. Default 0 (none: use `cancel()`). */
  promptTimeoutMs?: number;
  /** How long a handler may take before the agent is answered for it. Default 300000; 0 = none. */
  handlerTimeoutMs?: number;
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
  /** Runs after each automatic restart: re-`initialize()` and reload your sessions here. */
  onRestart?: (client: AcpClient, info: { attempt: number; exit: ExitInfo }) => void | Promise<void>;
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
  /** Automatic restarts so far. */
  restarts: number;
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
  /** The agent is gone; every pending call has been settled. */
  exit: [info: ExitInfo];
  /** Whole lines the agent wrote to stderr. */
  stderr: [text: string];
  /** A non-JSON line on stdout (a banner, a stray print). Never answered. */
  protocolNoise: [noise: { line: string; count: number }];
  /** A line that is JSON but not usable JSON-RPC, an oversized line, a response to an unknown id. */
  protocolError: [error: { kind: 'badJson' | 'batch' | 'notJsonRpc' | 'oversized' | 'unknownResponse'; message: string; line: string }];
  /** The restart policy started a new agent process. */
  restart: [info: { attempt: number; exit: ExitInfo }];
  /** The restart policy gave up (budget spent, or the respawn failed). */
  restartFailed: [info: { reason: string; exit: ExitInfo; error?: unknown }];
  /** A notification handler, the `trace` callback or the `logger` threw or rejected (without a listener: a process warning). */
  handlerError: [error: unknown, method: string];
  /**
   * The lifecycle state changed: `starting → initializing → ready ⇄ busy →
   * closing → closed`, or `failed` (unexpected exit, failed initialize);
   * a restart goes back to `starting`.
   */
  state: [change: { state: ClientState; previous: ClientState; reason?: string }];
}

/**
 * A connection to one ACP agent process.
 *
 * ```js
 * const client = new AcpClient({ command: 'agentao', args: ['--acp', '--stdio'],
 *   onSessionUpdate: ({ update }) => render(update),
 *   handlers: { 'session/request_permission': (p) => askUser(p) } });
 * await client.initialize();
 * const { sessionId } = await client.newSession({ cwd: '/abs/project' });
 * const { stopReason } = await client.prompt({ sessionId, prompt: 'hello' });
 * await client.close();
 * ```
 *
 * The constructor spawns the agent (throws ERR_ACP_SPAWN if it cannot).
 * Everything the agent sends is delivered in wire order: when a call's
 * Promise resolves, every notification sent before its response has
 * already reached your handlers.
 */
export declare class AcpClient extends EventEmitter<AcpClientEvents> {
  constructor(options: AcpClientOptions);
  /** Spawn + `initialize()`; kills the agent if initialize fails. */
  static connect(options: AcpClientOptions, initializeParams?: Partial<acp.InitializeRequest>): Promise<AcpClient>;

  readonly pid: number;
  /** The `initialize` result, once known. */
  readonly agent: acp.InitializeResponse | null;
  /** The exit report once the agent is gone. */
  readonly exitInfo: ExitInfo | null;
  readonly closed: boolean;
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
  /** Write `history()` to a file as NDJSON (one record per line); resolves with the record count. */
  saveHistory(path: string): Promise<number>;

  /** Register (or replace) the handler of an agent → client request. */
  onRequest<M extends keyof ClientRequestHandlers>(method: M, handler: ClientRequestHandlers[M]): Disposable;
  onRequest(method: string, handler: RequestHandler): Disposable;
  /** Add a notification handler; `'*'` receives `(method, params, message)` for all. */
  onNotification(method: string, handler: (params: any, message: object) => void | Promise<void>): Disposable;
  onSessionUpdate(handler: (params: acp.SessionNotification, message: object) => void | Promise<void>): Disposable;
  /**
   * A live view of a session, folded in the core (see SessionView); the
   * same view for the same session until closed. Opt-in: sessions without
   * a view cost nothing.
   */
  session(sessionId: string, options?: SessionViewOptions): SessionView;

  /** Sends protocolVersion 1 and capabilities derived from the handlers and the enabled built-ins; checks the agent's version. */
  initialize(params?: Partial<acp.InitializeRequest>, options?: CallOptions): Promise<acp.InitializeResponse>;
  authenticate(params: acp.AuthenticateRequest, options?: CallOptions): Promise<acp.AuthenticateResponse>;
  logout(params?: acp.LogoutRequest, options?: CallOptions): Promise<acp.LogoutResponse>;
  /** `cwd` defaults to `process.cwd()`, `mcpServers` to `[]`. */
  newSession(params?: Partial<acp.NewSessionRequest>, options?: CallOptions): Promise<acp.NewSessionResponse>;
  /** History is replayed as `session/update`s before this resolves. */
  loadSession(params: Partial<acp.LoadSessionRequest> & { sessionId: string }, options?: CallOptions): Promise<acp.LoadSessionResponse>;
  listSessions(params?: acp.ListSessionsRequest, options?: CallOptions): Promise<acp.ListSessionsResponse>;
  resumeSession(params: Partial<acp.ResumeSessionRequest> & { sessionId: string }, options?: CallOptions): Promise<acp.ResumeSessionResponse>;
  closeSession(params: acp.CloseSessionRequest, options?: CallOptions): Promise<acp.CloseSessionResponse>;
  deleteSession(params: acp.DeleteSessionRequest, options?: CallOptions): Promise<acp.DeleteSessionResponse>;
  setSessionMode(params: acp.SetSessionModeRequest, options?: CallOptions): Promise<acp.SetSessionModeResponse>;
  setSessionConfigOption(params: acp.SetSessionConfigOptionRequest, options?: CallOptions): Promise<acp.SetSessionConfigOptionResponse>;
  /** One turn. `prompt` may be a string (one text block). No timeout by default. */
  prompt(params: Omit<acp.PromptRequest, 'prompt'> & { prompt: acp.ContentBlock[] | string }, options?: CallOptions): Promise<acp.PromptResponse>;
  /**
   * Cancel the session's turn: sends `session/cancel` and answers every
   * permission, elicitation and extension request of that session still
   * pending with its cancelled outcome (their handlers' signals abort).
   * Returns how many were answered. The turn's `prompt()` then resolves
   * with `stopReason: 'cancelled'`.
   */
  cancel(sessionId: string): number;
  /** Any request, e.g. unstable or extension methods (`_agentao.cn/set_model`). */
  request<R = unknown>(method: string, params?: unknown, options?: CallOptions): Promise<R>;
  /** Any notification. */
  notify(method: string, params?: unknown): void;

  /**
   * Stop the agent: stdin EOF (stdout is still read: agents answer and
   * persist on EOF), then SIGTERM and SIGKILL to its process group after
   * `closeGraceMs` / `termGraceMs`. Resolves once it is gone and every
   * pending call has been rejected with ERR_ACP_CLOSED.
   */
  close(): Promise<ExitInfo>;
  /** SIGKILL the agent's process group now. */
  kill(): void;
  /** Keep Node running while this client is open (like `socket.ref()`). */
  ref(): this;
  /** Default: Node may exit while this client is idle; pending calls always keep it alive. */
  unref(): this;
}
