// Agents by registry id (docs/agents-manager.md): the types of
// AgentManager and of `AcpClient.connect({ agent, agents })`. Kept in its
// own file; index.d.ts re-exports it.
import type { AcpClientOptions } from '../index';

/** A registry binary target. */
export type AgentTarget =
  | 'darwin-aarch64'
  | 'darwin-x86_64'
  | 'linux-aarch64'
  | 'linux-x86_64'
  | 'windows-aarch64'
  | 'windows-x86_64';

/** An index entry as the registry writes it (`registry.json` → `agents[]`). */
export interface RegistryAgent {
  /** `^[a-z][a-z0-9-]*$`, anchored at the very end (`"evil\n"` is refused). */
  id: string;
  name: string;
  version: string;
  description?: string;
  repository?: string;
  website?: string;
  license?: string;
  authors?: string[];
  icon?: string;
  distribution: {
    binary?: Partial<
      Record<
        AgentTarget,
        { archive: string; cmd: string; args?: string[]; env?: Record<string, string>; sha256?: string }
      >
    >;
    /** `package`: `name` or `name@<exact version>` (unpinned: the agent's `version`). */
    npx?: { package: string; cmd?: string; args?: string[]; env?: Record<string, string> };
    /** `package`: `name`, `name==<version>` or `name@<version>`. */
    uvx?: { package: string; cmd?: string; args?: string[]; env?: Record<string, string> };
  };
  [field: string]: unknown;
}

/** The index: `{version, agents, extensions?}`. */
export interface RegistryIndex {
  version?: string;
  agents: RegistryAgent[];
  [field: string]: unknown;
}

/** An index after checking. */
export interface LoadedIndex {
  version: string;
  agents: RegistryAgent[];
  /** Entries left out, and why. */
  problems: string[];
  /** Where it came from: the host's object, the network, the cached copy (also after a 304), the snapshot bundled with this package. */
  source: 'object' | 'network' | 'cache' | 'bundled';
  /** True when a fallback was used (the network failed, or `offline`). */
  stale?: boolean;
  /** Why the network copy was not used. */
  error?: Error & { code?: string };
}

/** A host's own agent: a command by id, or an agent entry (with `distribution`) to install. */
export type AgentPreset =
  | { command: string; args?: string[]; env?: Record<string, string>; name?: string; description?: string }
  | Omit<RegistryAgent, 'id'>;

export interface AgentManagerLimits {
  /** Largest archive download. Default 512 MiB. */
  maxDownloadBytes?: number;
  /** Bytes an archive may unpack to. Default 2 GiB. */
  maxUnpackedBytes?: number;
  /** Entries an archive may hold. Default 20000. */
  maxEntries?: number;
  /** A download's total time. Default 10 minutes. */
  downloadTimeoutMs?: number;
  /** Longest silence of a download (no header, no bytes). Default 30000. */
  stallMs?: number;
  /** Redirects followed. Default 5. */
  maxRedirects?: number;
}

export interface AgentManagerOptions {
  /** The store's directory (absolute), e.g. a VS Code extension's `globalStorageUri.fsPath`. */
  storeDir: string;
  /** An index URL (default: the public ACP registry) or an index object. */
  index?: string | RegistryIndex;
  /** Agents of the host's own, by id; a preset wins over an index entry of the same id. */
  presets?: Record<string, AgentPreset>;
  /** Never fetch the index: the cached copy, else the bundled snapshot. */
  offline?: boolean;
  /** The Node that runs npx agents. Default `process.execPath` (under Electron, with ELECTRON_RUN_AS_NODE=1). */
  node?: string;
  /** The Python that creates uvx agents' venvs. Default `python3` (`python` on Windows). */
  python?: string;
  /** How to run npm, e.g. `['/usr/bin/node', '/path/npm-cli.js']`. Default: `<node> npm-cli.js`, found next to `node` or behind `npm` on PATH (no `.cmd` shim, no shell). */
  npmCommand?: string[];
  /** uvx agents: let pip build source distributions (that runs their build code). Default false: wheels only. */
  allowSourceBuilds?: boolean;
  /** Variables for npm and pip (a registry mirror, a cache directory, a proxy). */
  installEnv?: Record<string, string>;
  /** Which distribution to install when an agent has several. Default `['binary', 'npx', 'uvx']`. */
  prefer?: Array<'binary' | 'npx' | 'uvx'>;
  limits?: AgentManagerLimits;
  /** Timeout of the index fetch. Default 30000. */
  indexTimeoutMs?: number;
  /** A `fetch` to use instead of the global one (e.g. Electron's `net.fetch`). */
  fetch?: typeof fetch;
}

/** Progress of an install: `download` repeats as bytes arrive. */
export type AgentInstallProgress =
  | { phase: 'download'; receivedBytes: number; totalBytes?: number; url?: string }
  | { phase: 'install'; message: string }
  | { phase: 'extract' }
  | { phase: 'done' };

export interface AgentListEntry {
  id: string;
  name: string;
  version: string;
  description: string;
  source: 'index' | 'preset';
  /** The distributions usable here (`command` for a command preset). */
  distributions: string[];
  installable: boolean;
  /** Installed versions. */
  installed: string[];
  pinned?: string;
}

export interface AgentInstallResult {
  id: string;
  version: string;
  /** The version's directory in the store (null for a command preset). */
  dir: string | null;
  kind: 'binary' | 'npx' | 'uvx' | 'preset';
  /** False when it was already installed (by this or another process). */
  installed: boolean;
}

/** What AgentManager.launch gives: spread it into AcpClient options. */
export interface AgentLaunch {
  command: string;
  args: string[];
  env: Record<string, string>;
}

export interface AgentProbe {
  /** `ready`: a session opens; `needs-auth`: `session/new` answered -32000; `failed`: see `error` and `stderrTail`. */
  status: 'ready' | 'needs-auth' | 'failed';
  checkedAt: number;
  id?: string;
  version?: string;
  protocolVersion?: number;
  agentInfo?: { name: string; version: string; title?: string } | null;
  agentCapabilities?: Record<string, unknown>;
  /** The agent's ACP auth methods (may be empty when it wants its own configuration, e.g. an API key). */
  authMethods?: Array<{ id: string; name: string; description?: string | null; [field: string]: unknown }>;
  error?: { code: string; message: string };
  stderrTail?: string;
}

export interface AgentInfo extends RegistryAgent {
  installed: Array<{ version: string; kind: string; dir: string }>;
  pinned?: string;
  /** The cached probe of the version that would launch. */
  probe: AgentProbe | null;
}

/** Agents by registry id: resolve, install into a versioned store, launch, probe. */
export declare class AgentManager {
  constructor(options: AgentManagerOptions);
  readonly storeDir: string;
  /** The checked index (loaded once per manager; `refresh` loads it again). */
  index(options?: { refresh?: boolean; signal?: AbortSignal }): Promise<LoadedIndex>;
  list(): Promise<AgentListEntry[]>;
  info(id: string): Promise<AgentInfo>;
  installed(): Array<{ id: string; version: string; kind: string; dir: string }>;
  install(
    id: string,
    options?: { version?: string; onProgress?: (progress: AgentInstallProgress) => void; signal?: AbortSignal },
  ): Promise<AgentInstallResult>;
  /** Install the index's version unless pinned; `prune` removes the others. */
  update(
    id: string,
    options?: { prune?: boolean; onProgress?: (progress: AgentInstallProgress) => void; signal?: AbortSignal },
  ): Promise<{ id: string; from: string[]; to: string; updated: boolean }>;
  remove(id: string, options?: { version?: string }): Promise<boolean>;
  pin(id: string, version: string): void;
  unpin(id: string): void;
  /** The AcpClient options that run `id` (installed first unless `install: false`). */
  launch(
    id: string,
    options?: { install?: boolean; onProgress?: (progress: AgentInstallProgress) => void; signal?: AbortSignal },
  ): Promise<AgentLaunch>;
  probe(
    id: string,
    options?: {
      refresh?: boolean;
      cwd?: string;
      timeoutMs?: number;
      signal?: AbortSignal;
      env?: Record<string, string>;
      replaceEnv?: boolean;
    },
  ): Promise<AgentProbe>;
}

/** `AcpClient.connect({ agent: 'id', agents, ... })`: the id resolved (and installed) by an AgentManager. */
export type AgentConnectOptions = Omit<AcpClientOptions, 'command'> & {
  /** A registry (or preset) id. */
  agent: string;
  /** The manager, or its options. */
  agents: AgentManager | AgentManagerOptions;
  /** Progress of an install this connect starts. */
  onInstallProgress?: (progress: AgentInstallProgress) => void;
  command?: never;
};
