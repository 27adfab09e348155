// `acp-native agents list|info|install|remove|probe`: the agent store from
// the command line (lib/agents/manager.js). Index text is agent-controlled:
// every string printed goes through sanitizeForTerminal.
import { readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { isAbsolute, join, resolve } from 'node:path';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const { AgentManager } = require('../lib/agents/manager.js');
const { sanitizeForTerminal } = require('../lib/sanitize.js');
const one = (value) => sanitizeForTerminal(value ?? '', { singleLine: true });

/** The store directory: --store, $ACP_NATIVE_AGENTS_DIR, else a per-user data directory. */
export function storeDir(option) {
  if (option) return resolve(option);
  if (process.env.ACP_NATIVE_AGENTS_DIR) return resolve(process.env.ACP_NATIVE_AGENTS_DIR);
  if (process.platform === 'win32' && process.env.LOCALAPPDATA)
    return join(process.env.LOCALAPPDATA, 'acp-native', 'agents');
  if (process.platform === 'darwin') return join(homedir(), 'Library', 'Application Support', 'acp-native', 'agents');
  return join(process.env.XDG_DATA_HOME || join(homedir(), '.local', 'share'), 'acp-native', 'agents');
}

/** `--index`: an http(s) URL, or a JSON file holding an index. */
function indexOption(value) {
  if (value === undefined) return undefined;
  if (/^https?:\/\//i.test(value)) return value;
  const file = isAbsolute(value) ? value : resolve(value);
  return JSON.parse(readFileSync(file, 'utf8'));
}

export function makeManager(options) {
  return new AgentManager({
    storeDir: storeDir(options.store),
    index: indexOption(options.index),
    offline: options.offline === true,
  });
}

const mib = (n) => `${(n / (1024 * 1024)).toFixed(1)} MiB`;

/** A progress bar on `out` (a TTY: redrawn in place; else a line per phase). */
export function progressPrinter(out = process.stderr) {
  let last = '';
  let lastDraw = 0;
  return (e) => {
    if (e.phase === 'download' && e.receivedBytes > 0) {
      const now = Date.now();
      const done = e.totalBytes !== undefined && e.receivedBytes >= e.totalBytes;
      if (!out.isTTY || (now - lastDraw < 100 && !done)) return;
      lastDraw = now;
      const width = 30;
      const bar = e.totalBytes
        ? `[${'#'.repeat(Math.round((width * e.receivedBytes) / e.totalBytes)).padEnd(width, ' ')}] ${mib(e.receivedBytes)} / ${mib(e.totalBytes)}`
        : `${mib(e.receivedBytes)}`;
      out.write(`\r\x1b[2Kdownloading ${bar}`);
      last = 'bar';
      return;
    }
    if (last === 'bar') out.write('\n');
    last = e.phase;
    if (e.phase === 'download') out.write(`downloading ${one(e.url)}\n`);
    else if (e.phase === 'extract') out.write('unpacking…\n');
    else if (e.phase === 'install') out.write(`${one(e.message)}\n`);
  };
}

function printJson(value) {
  process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}

export async function runAgents({ sub, id, options }) {
  const m = makeManager(options);
  const json = options.json === true;
  switch (sub) {
    case 'list': {
      const index = await m.index();
      const list = await m.list();
      if (json) return (printJson({ source: index.source, problems: index.problems, agents: list }), 0);
      if (index.error) process.stderr.write(`note: using the ${index.source} index (${one(index.error.message)})\n`);
      for (const p of index.problems) process.stderr.write(`note: skipped an index entry: ${one(p)}\n`);
      for (const a of list) {
        const state = a.installed.length
          ? `installed ${a.installed.map(one).join(', ')}`
          : a.installable
            ? 'not installed'
            : 'not available here';
        const pin = a.pinned ? ` (pinned ${one(a.pinned)})` : '';
        process.stdout.write(
          `${one(a.id).padEnd(20)} ${one(a.version).padEnd(10)} ${one(a.name)} — ${state}${pin} [${a.distributions.map(one).join(', ')}]\n`,
        );
      }
      return 0;
    }
    case 'info': {
      const info = await m.info(id);
      if (json) return (printJson(info), 0);
      process.stdout.write(`${one(info.name)} (${one(info.id)}) ${one(info.version)}\n`);
      if (info.description) process.stdout.write(`${one(info.description)}\n`);
      for (const field of ['repository', 'website', 'license'])
        if (info[field]) process.stdout.write(`${field}: ${one(info[field])}\n`);
      process.stdout.write(
        `distributions: ${Object.keys(info.distribution).map(one).join(', ') || 'command (preset)'}\n`,
      );
      process.stdout.write(
        `installed: ${info.installed.map((i) => `${one(i.version)} (${one(i.kind)})`).join(', ') || 'no'}\n`,
      );
      if (info.pinned) process.stdout.write(`pinned: ${one(info.pinned)}\n`);
      if (info.probe) process.stdout.write(`last probe: ${one(info.probe.status)}\n`);
      return 0;
    }
    case 'install': {
      const r = await m.install(id, { version: options.version, onProgress: json ? undefined : progressPrinter() });
      if (json) return (printJson(r), 0);
      process.stdout.write(
        `${r.installed ? 'installed' : 'already installed'}: ${one(r.id)} ${one(r.version)} in ${one(r.dir)}\n`,
      );
      return 0;
    }
    case 'remove': {
      const removed = await m.remove(id, { version: options.version });
      if (json) return (printJson({ id, removed }), 0);
      process.stdout.write(
        removed
          ? `removed ${one(id)}${options.version ? ` ${one(options.version)}` : ''}\n`
          : `${one(id)} was not installed\n`,
      );
      return removed ? 0 : 1;
    }
    case 'probe': {
      const r = await m.probe(id, {
        refresh: options.refresh === true,
        cwd: options.cwd ? resolve(options.cwd) : undefined,
      });
      if (json) return (printJson(r), 0);
      process.stdout.write(`${one(id)}: ${one(r.status)}\n`);
      if (r.agentInfo)
        process.stdout.write(`agent: ${one(r.agentInfo.title ?? r.agentInfo.name)} ${one(r.agentInfo.version)}\n`);
      if (r.authMethods?.length)
        process.stdout.write(`auth methods: ${r.authMethods.map((a) => one(a.name ?? a.id)).join(', ')}\n`);
      if (r.agentCapabilities) process.stdout.write(`capabilities: ${one(JSON.stringify(r.agentCapabilities))}\n`);
      if (r.error) process.stdout.write(`error: ${one(r.error.message)}\n`);
      if (r.stderrTail)
        process.stdout.write(
          `${r.stderrTail
            .trim()
            .split('\n')
            .slice(-10)
            .map((l) => `agent stderr: ${one(l)}`)
            .join('\n')}\n`,
        );
      return r.status === 'failed' ? 1 : 0;
    }
  }
  return 2;
}
