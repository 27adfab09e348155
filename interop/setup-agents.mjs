// Installs the published npm ACP agents the interop suite drives, exactly
// as pinned by interop/agents/package-lock.json, into a cache directory
// keyed by the lock's hash (a changed lock installs afresh; an unchanged
// one is reused offline).
//
// `--ignore-scripts`: no agent needs its install script. codex-acp's
// binary is its per-platform optional dependency (a registry package,
// placed by npm itself); the packages that do have scripts (node-pty,
// keytar, qwen's audio capture) are optional native extras for the
// interactive terminal UIs, unused in ACP mode.
//
// `npm install` against the copied lock, then a check that the lock did not
// change: `npm ci` refuses this lock because one of qwen-code's dependencies
// (@teddyzhu/clipboard) names platform packages that were never published.
//
//   node interop/setup-agents.mjs [--print]   # install if missing [and print the paths]
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { copyFileSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { installOnce } from './setup-peers.mjs';
import { RECIPES } from './agents/recipes.mjs';

const HERE = fileURLToPath(new URL('./agents/', import.meta.url));
const MANIFEST = join(HERE, 'package.json');
const LOCK = join(HERE, 'package-lock.json');
const ATTEMPTS = 3;

export class AgentSetupError extends Error {
  constructor(message) {
    super(
      `interop agents could not be installed: ${message}\n` +
        'The interop suite needs the npm registry (npm config get registry) to install the pinned agents once; ' +
        'they are cached after that (set ACP_INTEROP_AGENTS_DIR to choose where).',
    );
    this.name = 'AgentSetupError';
  }
}

// The lock alone names what gets installed (package.json's dependencies
// are in it; the install fails if the two disagree).
function lockHash() {
  return createHash('sha256').update(readFileSync(LOCK)).digest('hex').slice(0, 16);
}

/** The cache directory for this lock (override with ACP_INTEROP_AGENTS_DIR). */
export function agentsDir() {
  if (process.env.ACP_INTEROP_AGENTS_DIR) return process.env.ACP_INTEROP_AGENTS_DIR;
  const cache = process.env.XDG_CACHE_HOME || join(homedir(), '.cache');
  return join(cache, 'acp-native', `interop-agents_${lockHash()}`);
}

/** The pinned `{package: version}` of package.json. */
export function pins() {
  return JSON.parse(readFileSync(MANIFEST, 'utf8')).dependencies;
}

/** The installed tree's root; throws AgentSetupError if it is not (fully) installed. */
export function readyAgents(dir = agentsDir()) {
  let stamp;
  try {
    stamp = JSON.parse(readFileSync(join(dir, 'ready.json'), 'utf8'));
  } catch {
    throw new AgentSetupError(
      `${dir} holds no finished install; run \`npm run test:interop\` or \`node interop/setup-agents.mjs\``,
    );
  }
  if (stamp.lock !== lockHash()) throw new AgentSetupError(`${dir} was installed from another lock file`);
  for (const recipe of Object.values(RECIPES)) {
    const entry = recipe.entry(dir);
    if (!existsSync(entry))
      throw new AgentSetupError(`${recipe.id}: ${entry} is missing; delete ${dir} and run setup again`);
  }
  return dir;
}

function npm(args, cwd) {
  const command = process.platform === 'win32' ? 'npm.cmd' : 'npm';
  return spawnSync(command, args, {
    cwd,
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
    shell: process.platform === 'win32',
    env: { ...process.env, npm_config_update_notifier: 'false', npm_config_fund: 'false', npm_config_audit: 'false' },
  });
}

const sleep = (ms) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);

function install(dir, log) {
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  copyFileSync(MANIFEST, join(dir, 'package.json'));
  copyFileSync(LOCK, join(dir, 'package-lock.json'));
  // A registry that cannot be reached fails here in seconds (npm install
  // itself retries each package for minutes before it gives up).
  const registry = npm(['config', 'get', 'registry'], dir).stdout?.trim() || 'the npm registry';
  for (let attempt = 1; ; attempt++) {
    const ping = npm(['ping', '--loglevel=error', '--fetch-retries=0'], dir);
    if (!ping.error && ping.status === 0) break;
    if (attempt === ATTEMPTS) {
      const why = ping.error
        ? ping.error.message
        : `${ping.stdout}\n${ping.stderr}`.trim().split('\n').slice(0, 3).join('\n');
      throw new AgentSetupError(`${registry} is unreachable (npm ping failed ${ATTEMPTS} times):\n${why}`);
    }
    log(`interop: npm ping ${registry} failed; retrying`);
    sleep(3000 * attempt);
  }
  const args = [
    'install',
    '--ignore-scripts',
    '--no-audit',
    '--no-fund',
    '--no-save',
    '--fetch-retries=3',
    '--fetch-retry-mintimeout=2000',
    '--fetch-retry-maxtimeout=15000',
    '--loglevel=error',
  ];
  let last;
  for (let attempt = 1; attempt <= ATTEMPTS; attempt++) {
    log(`interop: npm ${args.join(' ')} in ${dir} (attempt ${attempt}/${ATTEMPTS})`);
    last = npm(args, dir);
    if (!last.error && last.status === 0) break;
    if (attempt < ATTEMPTS) sleep(5000 * attempt);
  }
  if (last.error) throw new AgentSetupError(`cannot run npm: ${last.error.message}`);
  if (last.status !== 0) {
    const tail = `${last.stdout}\n${last.stderr}`.trim().split('\n').slice(-15).join('\n');
    throw new AgentSetupError(`npm install from ${registry} failed ${ATTEMPTS} times (exit ${last.status}):\n${tail}`);
  }
  if (!readFileSync(join(dir, 'package-lock.json')).equals(readFileSync(LOCK))) {
    throw new AgentSetupError(
      'npm changed the lock file while installing: interop/agents/package-lock.json is out of date',
    );
  }
  for (const [name, version] of Object.entries(pins())) {
    const installed = JSON.parse(readFileSync(join(dir, 'node_modules', name, 'package.json'), 'utf8')).version;
    if (installed !== version) throw new AgentSetupError(`${name}: installed ${installed}, pinned ${version}`);
  }
  writeFileSync(
    join(dir, 'ready.json'),
    JSON.stringify({ lock: lockHash(), pins: pins(), installedAt: new Date().toISOString() }, null, 2),
  );
}

/** Install the agents unless this lock's install is already there. Returns the tree's root. */
export function setupAgents({ log = (line) => process.stderr.write(`${line}\n`) } = {}) {
  return installOnce(agentsDir(), readyAgents, install, log, AgentSetupError);
}

if (import.meta.url === `file://${process.argv[1]}`) {
  try {
    const dir = setupAgents();
    if (process.argv.includes('--print')) console.log(dir);
    else console.error(`interop: agents ready in ${dir}`);
  } catch (err) {
    console.error(err.message);
    process.exit(1);
  }
}
