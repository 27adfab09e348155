'use strict';

// AgentManager: agents by registry id. Ties the index (registry.js), the
// store (store.js), the installers (install.js), the launch recipe
// (launch.js) and the probe (probe.js) together. See docs/agents-manager.md.

const path = require('node:path');
const { AcpError, invalidArgument } = require('../errors.js');
const check = require('../validate.js');
const { loadIndex, DEFAULT_INDEX_URL } = require('./registry.js');
const { checkAgent, currentTarget, ID } = require('./schema.js');
const { Store } = require('./store.js');
const { installNpx, installUvx, installBinary } = require('./install.js');
const { launchOptions } = require('./launch.js');
const { probeAgent } = require('./probe.js');

/** @type {Array<'binary' | 'npx' | 'uvx'>} */
const KINDS = ['binary', 'npx', 'uvx'];

/** @typedef {import('../../types/agents').AgentManager} AgentManagerApi */

const notFound = (id) =>
  new AcpError(
    'ERR_ACP_AGENT_NOT_FOUND',
    `no agent ${JSON.stringify(String(id).slice(0, 80))} in the index or the presets`,
    { id },
  );

function checkPreset(id, p) {
  if (!ID.test(id))
    throw invalidArgument(`agents.presets[${JSON.stringify(id)}]`, 'must be named by an id matching ^[a-z][a-z0-9-]*$');
  check.object(`agents.presets.${id}`, p);
  if (p.distribution !== undefined) return { ...checkAgent({ ...p, id }, `agents.presets.${id}`), source: 'preset' };
  check.string(`agents.presets.${id}.command`, p.command);
  if (p.args !== undefined && (!Array.isArray(p.args) || p.args.some((a) => typeof a !== 'string'))) {
    throw invalidArgument(`agents.presets.${id}.args`, 'must be an array of strings');
  }
  if (p.env !== undefined) check.object(`agents.presets.${id}.env`, p.env);
  return {
    id,
    name: typeof p.name === 'string' ? p.name : id,
    version: 'local',
    description: typeof p.description === 'string' ? p.description : '',
    distribution: {},
    command: { command: p.command, args: p.args ?? [], env: p.env ?? {} },
    source: 'preset',
  };
}

/** @implements {AgentManagerApi} */
class AgentManager {
  #o;
  #store;
  /** @type {ReturnType<typeof loadIndex> | null} */
  #index = null; // the last loaded index (a promise while loading)
  #presets;

  /**
   * @param {import('../../types/agents').AgentManagerOptions} options `storeDir` (absolute; required), `index` (URL or
   * index object; default the public registry), `presets` ({id: {command,
   * args, env, name} or an agent entry}), `offline`, `node`, `python`,
   * `npmCommand`, `prefer` (distribution order), `limits`,
   * `indexTimeoutMs`, `fetch`.
   */
  constructor(options) {
    check.object('options', options);
    this.#store = new Store(options.storeDir);
    if (
      options.index !== undefined &&
      typeof options.index !== 'string' &&
      (options.index === null || typeof options.index !== 'object')
    ) {
      throw invalidArgument('options.index', 'must be a URL or an index object');
    }
    if (
      options.prefer !== undefined &&
      (!Array.isArray(options.prefer) || options.prefer.some((k) => !KINDS.includes(k)))
    ) {
      throw invalidArgument('options.prefer', `must be an array of ${KINDS.join(', ')}`);
    }
    this.#presets = new Map(
      Object.entries(check.optionalObject('options.presets', options.presets) ?? {}).map(([id, p]) => [
        id,
        checkPreset(id, p),
      ]),
    );
    this.#o = { index: DEFAULT_INDEX_URL, prefer: KINDS, ...options };
  }

  get storeDir() {
    return this.#store.dir;
  }

  /**
   * The checked index (loaded once; `{refresh: true}` loads it again).
   * @param {Parameters<AgentManagerApi['index']>[0]} [options]
   */
  async index({ refresh = false, signal } = {}) {
    if (!this.#index || refresh) {
      const loading = loadIndex({
        index: this.#o.index,
        cacheDir: path.join(this.#store.dir, 'index'),
        offline: this.#o.offline === true,
        timeoutMs: this.#o.indexTimeoutMs,
        signal,
        fetchImpl: this.#o.fetch,
      });
      this.#index = loading;
      loading.catch(() => {
        if (this.#index === loading) this.#index = null;
      });
    }
    return this.#index;
  }

  /** The entry for `id`: a preset wins over the index. */
  async #entry(id) {
    check.string('id', id);
    if (this.#presets.has(id)) return this.#presets.get(id);
    const { agents } = await this.index();
    const entry = agents.find((a) => a.id === id);
    if (!entry) throw notFound(id);
    return entry;
  }

  /** Which distribution installs `entry` here: `{kind, dist}` or null. */
  #pick(entry) {
    const target = currentTarget();
    for (const kind of this.#o.prefer) {
      if (kind === 'binary' && target !== null && entry.distribution.binary?.[target])
        return { kind, dist: entry.distribution.binary[target] };
      if (kind !== 'binary' && entry.distribution[kind]) return { kind, dist: entry.distribution[kind] };
    }
    return null;
  }

  /** Every agent of the index and the presets, with what is installed and pinned. */
  async list() {
    const index = await this.index();
    const installed = this.#store.installed();
    const pins = this.#store.pins();
    const target = currentTarget();
    const all = [...index.agents.filter((a) => !this.#presets.has(a.id)), ...this.#presets.values()];
    return all.map((a) => ({
      id: a.id,
      name: a.name,
      version: a.version,
      description: a.description,
      source: a.source ?? 'index',
      distributions: a.command
        ? ['command']
        : Object.keys(a.distribution).filter(
            (k) => k !== 'binary' || (target !== null && a.distribution.binary[target]),
          ),
      installable: Boolean(a.command || this.#pick(a)),
      installed: installed.filter((i) => i.id === a.id).map((i) => i.version),
      pinned: pins[a.id],
    }));
  }

  /** One agent: its index entry, installed versions, pin and last probe. */
  async info(id) {
    const entry = await this.#entry(id);
    const installed = this.#store.installed().filter((i) => i.id === id);
    const pinned = this.#store.pins()[id];
    const version = pinned ?? entry.version;
    return {
      ...entry,
      installed: installed.map((i) => ({
        version: i.version,
        kind: i.record.kind,
        dir: this.#store.versionDir(id, i.version),
      })),
      pinned,
      probe: entry.command ? null : this.#store.readJson(id, version, 'probe.json'),
    };
  }

  /** Every installed `{id, version, kind, dir}`. */
  installed() {
    return this.#store
      .installed()
      .map(({ id, version, record }) => ({ id, version, kind: record.kind, dir: this.#store.versionDir(id, version) }));
  }

  /**
   * Install `id` (the pinned version, else the index's), unless it already
   * is. Options: `version` (npx/uvx: another exact version), `onProgress`,
   * `signal`. Resolves `{id, version, dir, kind, installed: boolean}`.
   * @param {string} id
   * @param {Parameters<AgentManagerApi['install']>[1]} [options]
   * @returns {ReturnType<AgentManagerApi['install']>}
   */
  async install(id, { version, onProgress, signal } = {}) {
    const entry = await this.#entry(id);
    if (entry.command) return { id, version: 'local', dir: null, kind: 'preset', installed: false };
    const picked = this.#pick(entry);
    if (!picked)
      throw new AcpError(
        'ERR_ACP_AGENT_INSTALL',
        `agent ${id} has no distribution for ${currentTarget() ?? process.platform}`,
        { id },
      );
    const want = version ?? this.#store.pins()[id] ?? entry.version;
    let dist = picked.dist;
    if (want !== entry.version) {
      if (picked.kind === 'binary')
        throw new AcpError(
          'ERR_ACP_AGENT_INSTALL',
          `agent ${id}: the index has binaries of ${entry.version} only, not ${want}`,
          { id },
        );
      dist = { ...dist, version: want };
    }
    const done = () => ({ id, version: want, dir: this.#store.versionDir(id, want), kind: picked.kind });
    if (this.#store.record(id, want)) return { ...done(), installed: false };
    return this.#store.withLock(
      id,
      want,
      async () => {
        if (this.#store.record(id, want)) return { ...done(), installed: false }; // another process finished it
        this.#store.clearUnusable(id, want);
        const staging = this.#store.staging(id);
        try {
          const o = {
            node: this.#o.node,
            python: this.#o.python,
            npmCommand: this.#o.npmCommand,
            limits: this.#o.limits,
            fetch: this.#o.fetch,
            env: this.#o.installEnv,
            allowSourceBuilds: this.#o.allowSourceBuilds,
            onProgress,
            signal,
          };
          const how =
            picked.kind === 'npx'
              ? await installNpx(dist, staging, o)
              : picked.kind === 'uvx'
                ? await installUvx(dist, staging, o)
                : await installBinary(dist, staging, o);
          const record = {
            id,
            version: want,
            ...how,
            args: dist.args,
            env: dist.env,
            installedAt: new Date().toISOString(),
          };
          const won = this.#store.commit(staging, id, want, record);
          onProgress?.({ phase: 'done' });
          return { ...done(), installed: won };
        } catch (err) {
          // The install's own error is what the caller needs, even if Windows holds a file a moment longer.
          try {
            require('node:fs').rmSync(staging, { recursive: true, force: true, maxRetries: 3 });
          } catch {}
          throw err;
        }
      },
      { signal },
    );
  }

  /**
   * Install the index's version of `id` unless it is pinned; older
   * versions are removed when `prune` is set. Resolves
   * `{id, from, to, updated}`.
   * @param {string} id
   * @param {Parameters<AgentManagerApi['update']>[1]} [options]
   */
  async update(id, { prune = false, onProgress, signal } = {}) {
    await this.index({ refresh: true, signal });
    const entry = await this.#entry(id);
    const before = this.#store
      .installed()
      .filter((i) => i.id === id)
      .map((i) => i.version);
    const pinned = this.#store.pins()[id];
    if (pinned !== undefined || entry.command) return { id, from: before, to: pinned ?? 'local', updated: false };
    const result = await this.install(id, { onProgress, signal });
    if (prune) for (const v of before) if (v !== result.version) this.#store.remove(id, v);
    return { id, from: before, to: result.version, updated: result.installed };
  }

  /**
   * Remove `id` (one `version`, or all); resolves whether anything was removed.
   * @param {string} id
   * @param {Parameters<AgentManagerApi['remove']>[1]} [options]
   */
  async remove(id, { version } = {}) {
    check.string('id', id);
    return this.#store.remove(id, version);
  }

  /** Pin `id` to `version` (install and launch use it; update leaves it). */
  pin(id, version) {
    check.string('version', version);
    this.#store.setPin(id, version);
  }

  unpin(id) {
    this.#store.setPin(id, undefined);
  }

  /**
   * AcpClient options (`{command, args, env}`) that run `id`, installed
   * first unless `install: false`. Spread them into `new AcpClient` /
   * `AcpClient.connect` with your own options.
   * @param {string} id
   * @param {Parameters<AgentManagerApi['launch']>[1]} [options]
   */
  async launch(id, { install = true, onProgress, signal } = {}) {
    const entry = await this.#entry(id);
    if (entry.command) return launchOptions({ kind: 'preset', ...entry.command }, '');
    const version = this.#store.pins()[id] ?? entry.version;
    let record = this.#store.record(id, version);
    if (!record) {
      if (!install)
        throw new AcpError('ERR_ACP_AGENT_NOT_INSTALLED', `agent ${id} ${version} is not installed`, { id, version });
      await this.install(id, { onProgress, signal });
      record = this.#store.record(id, version);
    }
    return launchOptions(record, this.#store.versionDir(id, version), { node: this.#o.node });
  }

  /**
   * Start `id`, initialize, try a session: `{status: 'ready' | 'needs-auth'
   * | 'failed', agentCapabilities, authMethods, …}`. Cached per installed
   * version; `refresh: true` probes again. `env` (and `replaceEnv`) as
   * the host will launch it: a probe with other variables is another
   * question, so pass `refresh` when they change.
   * @param {string} id
   * @param {Parameters<AgentManagerApi['probe']>[1]} [options]
   */
  async probe(id, { refresh = false, cwd, timeoutMs, signal, env, replaceEnv } = {}) {
    const entry = await this.#entry(id);
    const launch = await this.launch(id, { signal });
    // `env`: what the host will run it with (API keys, config dirs) — it decides the outcome.
    const options = { ...launch, env: { ...launch.env, ...env }, replaceEnv: replaceEnv === true };
    if (entry.command) return probeAgent(options, { cwd, timeoutMs, signal });
    const version = this.#store.pins()[id] ?? entry.version;
    const cached = refresh ? null : this.#store.readJson(id, version, 'probe.json');
    if (cached && cached.version === version) return cached;
    const result = { ...(await probeAgent(options, { cwd, timeoutMs, signal })), id, version };
    // A failure is often passing (no network, a config being fixed): not kept.
    if (result.status !== 'failed') this.#store.writeJson(id, version, 'probe.json', result);
    return result;
  }
}

module.exports = { AgentManager };
