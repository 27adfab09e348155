// The session store (lib/store.js; docs/sessions-store.md).
import type { AcpClient, AcpClientOptions } from '../index';
import type { SessionViewState, SessionView } from './session-view';

/** How a store is opened; a bound of 0 or less is no bound. */
export interface SessionStoreOptions {
  /** Sessions kept at most (default 10,000); the least recently updated go first. */
  maxSessions?: number;
  /** Bytes of stored views and journals at most (default 1 GiB). */
  maxBytes?: number;
  /** Sessions not updated for longer are pruned (default 180 days). */
  maxAgeMs?: number;
  /** How often the writer copies a live view at most, in ms (default 250). */
  intervalMs?: number;
}

/** A stored session without its view. */
export interface StoredSessionSummary {
  /** The store's id (`s_` and 32 hex digits): kept when the agent's session id changes. */
  id: string;
  /** How the agent was started and who it said it was. */
  agent: { command: string; args: string[]; name: string | null; version: string | null } | null;
  /** The agent's session id (the latest, after a recovery). */
  agentSessionId: string | null;
  cwd: string | null;
  /** The first prompt's text, cut to 120 characters. */
  title: string | null;
  /** ms since the epoch. */
  createdAt: number;
  updatedAt: number;
  /** `interrupted`: the agent (or host) died; recover() continues it. */
  state: 'open' | 'closed' | 'interrupted';
  forkedFrom: string | null;
  bytes: number;
  capabilities: Record<string, unknown> | null;
  /** search() only: the text around a match, the match between `[` and `]`. */
  snippet?: string;
}

export interface StoredSession extends StoredSessionSummary {
  /** The folded session view as last copied (`null` before the first copy). */
  view: SessionViewState | null;
  viewRevision: number;
}

export interface JournalRecord {
  seq: number;
  at: number;
  kind: 'prompt' | 'turn_end' | 'interrupted' | 'recovered';
  data: unknown;
}

export interface SessionExport {
  format: 'acp-native-session';
  version: 1;
  exportedAt: string;
  session: StoredSession & { journal: JournalRecord[] };
}

/** The writer thread's counters. */
export interface SessionStoreStats {
  batches: number;
  viewsWritten: number;
  /** View changes never written on their own: a later copy held them. */
  coalesced: number;
  /** Journal records dropped because the writer was too far behind. */
  dropped: number;
  /** Batches that failed (kept and retried). */
  errors: number;
  pruned: number;
  lastError: { code: string; message: string } | null;
}

/** How a stored session was continued. */
export interface Recovery {
  storedId: string;
  /** The agent's session id now (new when `how` is `fresh`). */
  sessionId: string;
  /** `resume`: session/resume; `load`: session/load (replay de-duplicated); `fresh`: a new session seeded from the store (the agent does not know the history). */
  how: 'resume' | 'load' | 'fresh';
  /** Entries the stored view added to the live one. */
  restored: number;
  /** The stored last turn was cut (a notice entry says so). */
  interrupted: boolean;
  /** Why resume or load was not used, when they failed. */
  reason?: string;
  view: SessionView;
}

/** One entry of `client.sessions()`. */
export interface SessionListing {
  sessionId: string | null;
  storedId: string | null;
  /** The agent lists it (`session/list`). */
  native: boolean;
  /** The store holds it. */
  stored: boolean;
  title: string | null;
  cwd: string | null;
  updatedAt: string | null;
  state?: StoredSessionSummary['state'];
  agent?: StoredSessionSummary['agent'];
}

export declare class SessionStore {
  /** Open (creating if need be) the store in `dir`: ERR_ACP_STORE_CORRUPT, _FOREIGN or _NEWER for a file it cannot use (left as it is). */
  static open(dir: string, options?: SessionStoreOptions): Promise<SessionStore>;
  /** The store file. */
  readonly path: string;
  /** Most recently updated first. */
  list(options?: { limit?: number; offset?: number }): Promise<StoredSessionSummary[]>;
  /** Full text over titles, prompts and messages; every word must match; best first. */
  search(text: string, options?: { limit?: number }): Promise<StoredSessionSummary[]>;
  get(id: string): Promise<StoredSession>;
  export(id: string): Promise<SessionExport>;
  /** Resolves once the deletion is committed. */
  delete(id: string): Promise<void>;
  /** Resolves once everything recorded so far is committed; rejects with the batch's typed error. */
  flush(): Promise<void>;
  stats(): SessionStoreStats;
  close(): Promise<void>;
  /** Spawn the stored session's agent (or `options.command`) and continue the session. */
  resume(id: string, options?: Partial<AcpClientOptions>): Promise<Recovery & { client: AcpClient }>;
}
