// Session views (issue "Session state in Rust"): the types of
// `client.session()`, the JS reference fold and the helpers around them.
// Kept in its own file; index.d.ts re-exports it.
import { EventEmitter } from 'node:events';
import type * as acp from './acp';

/** One item of a session's transcript, in arrival order. `index` never changes and never repeats. */
export type SessionEntry =
  | {
      index: number;
      kind: 'user' | 'agent' | 'thought';
      /** The chunks' `messageId`, if they had one (a new id starts a new entry). */
      messageId?: unknown;
      /** Text-only blocks of consecutive chunks are concatenated; other blocks kept as they came. */
      content: acp.ContentBlock[];
      /** Other fields of the chunks (`_meta`, unknown fields), merged. */
      extra?: Record<string, unknown>;
      /** Text bytes refused by `maxTextBytes` or `maxTotalBytes`. */
      droppedBytes?: number;
      /** Blocks refused by `maxBlocks` or `maxTotalBytes`. */
      droppedBlocks?: number;
    }
  | { index: number; kind: 'tool_call'; toolCallId: string }
  | { index: number; kind: 'notice'; notice: Record<string, unknown> }
  | {
      index: number;
      kind: 'compaction';
      compactionId: string;
      /** `compaction_summary_chunk` content, accumulated like a message. */
      content: acp.ContentBlock[];
      extra?: Record<string, unknown>;
      droppedBytes?: number;
      droppedBlocks?: number;
    }
  /** An update of a variant this version does not know (or with missing key fields), whole. */
  | { index: number; kind: 'unknown'; update: unknown };

/** A tool call with every `tool_call_update` merged in (unknown fields kept). */
export type SessionToolCall = Partial<Omit<acp.ToolCall, 'toolCallId'>> & {
  toolCallId: string;
  [field: string]: unknown;
};

/**
 * What a view keeps in place of an agent's array or object over
 * `maxTotalBytes` (by the view's size count, `bytes`) or nested deeper than
 * 64 (e.g. a tool call's `rawInput`): see docs/limits.md.
 */
export interface OmittedValue {
  $omitted: 'size' | 'depth';
  bytes: number;
}

/** An agent request of this session waiting for the host (e.g. a permission question). */
export interface PendingAgentRequest {
  /** The JSON-RPC id as the agent sent it. */
  id: string | number | null;
  method: string;
  params: any;
}

/** The folded state of one session (`view.snapshot()`, `fold.toJSON()`). */
export interface SessionViewState {
  /**
   * In a view's `snapshot()` (not enumerable, so it stays out of JSON and
   * comparisons): the `seq` of the last change event the state holds.
   * `applyChanges` skips events up to it and keeps it current.
   */
  readonly seq?: number;
  sessionId: string;
  entries: SessionEntry[];
  /** Entries dropped by `maxEntries` or `maxTotalBytes` (the oldest first). */
  droppedEntries: number;
  toolCalls: Record<string, SessionToolCall>;
  compactions: Record<string, { compactionId: string; [field: string]: unknown }>;
  /** The last `plan` update (without `sessionUpdate`), or null. */
  plan: (acp.Plan & Record<string, unknown>) | null;
  /**
   * `currentModeId` and, when seeded from a session setup result, `availableModes`. A
   * `setSessionMode()` that succeeds sets `currentModeId` (agents do not echo it), in wire order.
   */
  modes: Partial<acp.SessionModeState> & Record<string, unknown>;
  /** `configOptions`: from the setup result, `config_option_update`s, and each successful `setSessionConfigOption()`'s response. */
  config: { configOptions?: acp.SessionConfigOption[]; [field: string]: unknown };
  commands: { availableCommands?: acp.AvailableCommand[]; [field: string]: unknown };
  /** `session_info_update` fields merged: `title`, `updatedAt`, … */
  info: { title?: string | null; updatedAt?: string | null; [field: string]: unknown };
  usage: ({ used?: number; size?: number; cost?: unknown } & Record<string, unknown>) | null;
  /** The stop reason of the last answered `session/prompt`. */
  stopReason: acp.StopReason | null;
  /** A `session/prompt` of this session is waiting for its answer. */
  running: boolean;
  pending: PendingAgentRequest[];
  /** New keys refused by `maxKeys`, or by `maxTotalBytes` (an update that would grow its entry, or its session-wide object, past it adds none). */
  droppedKeys: number;
}

/**
 * What changed since the previous `change` event; only changed keys are
 * present. `applyChanges(copy, changes)` turns the previous state into the
 * new one.
 */
export interface SessionViewChanges {
  /**
   * This event's number, one more than the view's event before it (every
   * `change` event has one; without it, `applyChanges` applies the change).
   */
  seq?: number;
  newEntries?: SessionEntry[];
  /**
   * What an entry you already have gained (entries only grow; one is
   * never resent whole): `text` appended to your last block of it (a text
   * block whenever `text` is not empty), then `blocks` to append, the
   * `extra` keys that changed, and its new `droppedBytes`/`droppedBlocks`
   * when a chunk was refused by a limit.
   */
  appended?: {
    index: number;
    text: string;
    blocks?: acp.ContentBlock[];
    extra?: Record<string, unknown>;
    droppedBytes?: number;
    droppedBlocks?: number;
  }[];
  /** Entries before this index were dropped (with their tool calls/compactions). */
  firstIndex?: number;
  droppedEntries?: number;
  /** Tool calls new to you, whole. */
  toolCalls?: Record<string, SessionToolCall>;
  /**
   * Tool calls you already have: only their keys that changed (a status
   * change does not resend a large `rawInput`). Assign each key.
   */
  toolCallFields?: Record<string, Partial<SessionToolCall>>;
  /** Compactions new to you, whole. */
  compactions?: SessionViewState['compactions'];
  /** Compactions you already have: only their keys that changed. */
  compactionFields?: Record<string, Record<string, unknown>>;
  /** The new plan, whole (a plan update replaces it). */
  plan?: SessionViewState['plan'];
  /**
   * `modes`, `config`, `commands`, `info`, `usage`: the keys that changed
   * (assign each into yours; `usage` may be new, from `null`). A title
   * update does not resend the rest of `info`.
   */
  modes?: Partial<SessionViewState['modes']>;
  config?: Partial<SessionViewState['config']>;
  commands?: Partial<SessionViewState['commands']>;
  info?: Partial<SessionViewState['info']>;
  usage?: Partial<NonNullable<SessionViewState['usage']>>;
  stopReason?: SessionViewState['stopReason'];
  running?: boolean;
  /** Agent requests no longer awaiting the host: their positions in your `pending` list (ascending). */
  pendingRemoved?: number[];
  /** Agent requests now awaiting the host, to append to your `pending` list (after removing `pendingRemoved`). */
  pendingAdded?: PendingAgentRequest[];
  droppedKeys?: number;
}

/** Bounds on a view's memory (defaults in brackets). */
export interface SessionViewLimits {
  /** Entries kept; the oldest go first, with the tool call or compaction they introduced [50,000]; `maxTotalBytes` is meant to bind first. Also bounds `pending`. */
  maxEntries?: number;
  /** UTF-8 text bytes per entry; a chunk that does not fit is dropped whole and counted [4 MiB]. */
  maxTextBytes?: number;
  /** Content blocks per entry [1024]. */
  maxBlocks?: number;
  /** Keys per merged object (tool call, info, modes, …); an update whose new keys do not all fit adds none [256]. */
  maxKeys?: number;
  /**
   * Bytes of all entries together; the oldest go first (with the tool call or compaction they introduced),
   * never the entry the update went into [64 MiB]. Nor does an update grow one entry past it: a chunk or
   * block that would is dropped (`droppedBytes`, `droppedBlocks`), a merge that would adds none of its keys
   * (`droppedKeys`); a notice or unknown update is kept whole. An entry counts its message text's UTF-8 bytes and a
   * structural size of all else it holds (its tool call's fields, non-text blocks, `extra`, the unknown
   * update, …): strings and keys their UTF-8 bytes, numbers/booleans/null 8, each array element or object
   * member 16 more. A field an update replaces counts at its new size. Each session-wide object (`modes`,
   * `config`, `commands`, `info`, `usage`) is bounded by it too, on its own: a merge past it adds nothing.
   */
  maxTotalBytes?: number;
}

export interface SessionViewOptions extends SessionViewLimits {
  /**
   * At most one `change` event per this many ms [16], up to 2³¹−1; 0: one
   * per delivered batch. An event carries about 256 KiB at most (message
   * text, and whole entries by their size): a bigger backlog goes out as
   * several events, one per turn of the event loop, faster than one per
   * `intervalMs` until it is out.
   */
  intervalMs?: number;
  /** Deliver the session's updates to `onSessionUpdate` as well [false: folded only]. */
  forward?: boolean;
  /** The `session/new` (or load/resume) result: its modes and config options seed the view. */
  setup?: unknown;
}

export interface SessionViewEvents {
  change: [changes: SessionViewChanges];
  /**
   * The agent process was restarted: the view starts over, empty, its
   * events numbered from 1 again. Start your copy over from `snapshot()`.
   */
  reset: [];
}

/**
 * A live view of one session, folded in the core. While it is open, the
 * session's `session/update`s are folded in Rust and not delivered one by
 * one (unless `forward`). Open it before `loadSession`/`resumeSession` to
 * fold their replay. When a response arrives, the view already holds every
 * update the agent sent before it.
 */
export declare class SessionView extends EventEmitter<SessionViewEvents> {
  readonly sessionId: string;
  readonly closed: boolean;
  /**
   * The whole current state (a fresh copy), with its `seq`. Changes taken
   * with it (in one hold of the core's state) are emitted after it
   * returns, never during: whether a listener was attached before or
   * after, its copy exists first, and `applyChanges` skips them (their
   * `seq` is at most the snapshot's). `subscribe()` does both at once.
   */
  snapshot(): SessionViewState;
  /**
   * The current state and a `change` listener attached at once: the
   * listener gets exactly the changes the returned state does not hold,
   * so `applyChanges(state, changes)` in it keeps the copy exact. After a
   * `reset` it gets every event (start the copy over from `snapshot()`).
   */
  subscribe(listener: (changes: SessionViewChanges) => void): { state: SessionViewState; unsubscribe(): void };
  /**
   * Resolves once every change the view holds has been emitted (a big
   * backlog as several events, one per turn of the event loop). Changes
   * the agent sends meanwhile are included: await it once the output you
   * wait for has arrived, e.g. after `prompt()` resolves. Resolves at once
   * on a closed view.
   */
  settled(): Promise<void>;
  toJSON(): SessionViewState;
  /** The transcript as Markdown. */
  toMarkdown(): string;
  /**
   * Emit the pending changes now (e.g. before rendering a permission
   * question), before it returns: a backlog over about 256 KiB as several
   * events, 64 at most; past that, the rest follows on the next turns of
   * the loop, one event per turn (the loop stays alive until it is out).
   * Returns the last one emitted, or null.
   */
  flush(): SessionViewChanges | null;
  /**
   * Changes wait to be emitted: the agent changed the session since the
   * last `change` event, or a backlog is going out over several turns.
   * Right after `flush()`, true only if it stopped at its 64-event cap (or
   * the agent sent more meanwhile); false on a closed view.
   */
  readonly pending: boolean;
  /** Stop folding; the session's updates are delivered one by one again. */
  close(): void;
}

/** The plain JS reference fold: the same rules as a view, for hosts that fold updates themselves. */
export declare class SessionFold {
  constructor(sessionId: string, limits?: SessionViewLimits);
  readonly sessionId: string;
  /** Fold one `session/update`'s `update`. */
  applyUpdate(update: unknown): void;
  /** A `session/new|load|resume` result. */
  applySetup(result: unknown): void;
  promptStarted(): void;
  /** The `session/prompt` result (undefined for an error). */
  promptEnded(result?: unknown): void;
  requestWaiting(key: string, id: unknown, method: string, params: unknown): void;
  requestSettled(key: string): void;
  /** The bytes the kept entries count toward `maxTotalBytes`. */
  readonly totalBytes: number;
  toJSON(): SessionViewState;
}

/** Fold a recording (NDJSON trace records) in JS: `{ sessions: { [id]: state } }`. */
export declare function foldRecording(
  text: string,
  limits?: SessionViewLimits,
): { sessions: Record<string, SessionViewState> };
/** Fold a recording in the core (Rust): same result as `foldRecording`, faster. */
export declare function foldRecordingNative(
  text: string,
  limits?: SessionViewLimits,
): { sessions: Record<string, SessionViewState> };
/**
 * Apply a `change` event to a copy of the previous state (mutates and
 * returns it). An event the copy already holds (`seq` at most the copy's)
 * is skipped. The copy adopts the event's objects (new entries, tool
 * calls): to keep two copies, give one `structuredClone(changes)`.
 */
export declare function applyChanges(state: SessionViewState, changes: SessionViewChanges): SessionViewState;
/**
 * A Markdown transcript of a state. Agent text is escaped (see
 * escapeMarkdown): it cannot forge a heading, turn, link, image or HTML.
 * `prompts`: the user's own prompts, each placed before the entry with
 * index `at` (as `## User`); user messages from the agent say so.
 */
export declare function toMarkdown(
  state: SessionViewState,
  options?: { prompts?: ReadonlyArray<{ at: number; content: ReadonlyArray<unknown>; cut?: boolean }> },
): string;
