// Installs the third-party ACP agents the interop suite talks to, into a
// Python venv in a cache directory keyed by the pinned versions:
//   - agentao (PyPI), run as `agentao --acp --stdio`
//   - the official Python ACP SDK (`agent-client-protocol`), whose example
//     agents ship only in its source distribution: the sdist is downloaded
//     from PyPI and its examples/ extracted next to the venv.
// Nothing is skipped: if a peer cannot be installed this fails loudly.
//
//   node interop/setup-peers.mjs [--print]   # install if missing [and print the paths]
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';

export const PINS = { agentao: '0.5.17', 'agent-client-protocol': '0.12.1' };
const SDK_EXAMPLES = ['echo_agent.py', 'agent.py'];
const MIN_PYTHON = [3, 10];

/** The cache directory for these pins (override with ACP_INTEROP_PEERS_DIR). */
export function peersDir() {
  if (process.env.ACP_INTEROP_PEERS_DIR) return process.env.ACP_INTEROP_PEERS_DIR;
  const cache = process.env.XDG_CACHE_HOME || join(homedir(), '.cache');
  const key = Object.entries(PINS)
    .map(([name, v]) => `${name}-${v}`)
    .join('_');
  return join(cache, 'acp-native', `interop-venv_${key}`);
}

function layout(dir) {
  const bin = process.platform === 'win32' ? join(dir, 'venv', 'Scripts') : join(dir, 'venv', 'bin');
  const exe = process.platform === 'win32' ? '.exe' : '';
  return {
    dir,
    python: join(bin, `python${exe}`),
    agentao: join(bin, `agentao${exe}`),
    echoAgent: join(dir, 'sdk-examples', 'echo_agent.py'),
    exampleAgent: join(dir, 'sdk-examples', 'agent.py'),
    stamp: join(dir, 'ready.json'),
  };
}

export class PeerSetupError extends Error {
  constructor(message) {
    super(
      `interop peers could not be installed: ${message}\n` +
        'The interop suite needs Python >= 3.10 with the venv module and access to PyPI ' +
        '(set ACP_INTEROP_PYTHON to pick the interpreter).',
    );
    this.name = 'PeerSetupError';
  }
}

/** The installed peers' paths; throws PeerSetupError if they are not (fully) installed. */
export function readyPeers(dir = peersDir()) {
  const paths = layout(dir);
  let stamp;
  try {
    stamp = JSON.parse(readFileSync(paths.stamp, 'utf8'));
  } catch {
    throw new PeerSetupError(
      `${dir} holds no finished install; run \`npm run test:interop\` or \`node interop/setup-peers.mjs\``,
    );
  }
  if (JSON.stringify(stamp.pins) !== JSON.stringify(PINS)) {
    throw new PeerSetupError(`${dir} was installed for ${JSON.stringify(stamp.pins)}, not ${JSON.stringify(PINS)}`);
  }
  for (const file of [paths.python, paths.agentao, paths.echoAgent, paths.exampleAgent]) {
    if (!existsSync(file)) throw new PeerSetupError(`${file} is missing; delete ${dir} and run setup again`);
  }
  return paths;
}

function run(command, args, what) {
  const r = spawnSync(command, args, {
    encoding: 'utf8',
    env: { ...process.env, PIP_NO_INPUT: '1', PIP_DISABLE_PIP_VERSION_CHECK: '1' },
    maxBuffer: 64 * 1024 * 1024,
  });
  if (r.error) throw new PeerSetupError(`${what}: cannot run ${command}: ${r.error.message}`);
  if (r.status !== 0) {
    const tail = `${r.stdout}\n${r.stderr}`.trim().split('\n').slice(-15).join('\n');
    throw new PeerSetupError(`${what} failed (\`${command} ${args.join(' ')}\` exited ${r.status}):\n${tail}`);
  }
  return r.stdout;
}

function findPython() {
  const python = process.env.ACP_INTEROP_PYTHON || (process.platform === 'win32' ? 'python' : 'python3');
  const version = run(python, ['-c', 'import sys; print("%d.%d" % sys.version_info[:2])'], 'checking Python').trim();
  const [major, minor] = version.split('.').map(Number);
  if (major < MIN_PYTHON[0] || (major === MIN_PYTHON[0] && minor < MIN_PYTHON[1])) {
    throw new PeerSetupError(`${python} is Python ${version}; agentao needs >= ${MIN_PYTHON.join('.')}`);
  }
  return python;
}

const sleep = (ms) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);

function pidAlive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return err.code === 'EPERM';
  }
}

/** One installer at a time: a lock directory holding the owner's pid. */
export function withLock(dir, fn, log, SetupError = PeerSetupError) {
  const lock = `${dir}.lock`;
  mkdirSync(join(lock, '..'), { recursive: true });
  for (let waited = 0; ; waited += 1) {
    try {
      mkdirSync(lock);
      writeFileSync(join(lock, 'pid'), String(process.pid));
      break;
    } catch (err) {
      if (err.code !== 'EEXIST') throw err;
      let owner = 0;
      try {
        owner = Number(readFileSync(join(lock, 'pid'), 'utf8'));
      } catch {
        // the owner is between mkdir and writing its pid
      }
      if (owner && !pidAlive(owner)) {
        rmSync(lock, { recursive: true, force: true });
        continue;
      }
      if (waited === 0) log(`interop: waiting for another install (pid ${owner || '?'}) to finish`);
      if (waited > 1200) throw new SetupError(`${lock} is held by pid ${owner} for more than 10 minutes`);
      sleep(500);
    }
  }
  try {
    return fn();
  } finally {
    rmSync(lock, { recursive: true, force: true });
  }
}

/**
 * `ready(dir)` if the install is there, else `install(dir, log)` under the
 * lock (another process may have finished it meanwhile); a half install is
 * removed, since it is useless.
 */
export function installOnce(dir, ready, install, log, ErrorClass) {
  try {
    return ready(dir);
  } catch {
    // not installed yet (or broken): build it below
  }
  return withLock(
    dir,
    () => {
      try {
        return ready(dir); // another process finished it meanwhile
      } catch {
        try {
          install(dir, log);
        } catch (err) {
          rmSync(dir, { recursive: true, force: true });
          throw err;
        }
        return ready(dir);
      }
    },
    log,
    ErrorClass,
  );
}

/** Install the peers unless an install for these pins is already there. Returns the paths. */
export function setupPeers({ log = (line) => process.stderr.write(`${line}\n`) } = {}) {
  return installOnce(peersDir(), readyPeers, install, log);
}

// Built in place (a venv's scripts hold absolute paths, so it cannot be
// moved); the stamp is written last, so an interrupted install never looks
// finished and is redone from scratch.
function install(dir, log) {
  const python = findPython();
  const paths = layout(dir);
  const specs = Object.entries(PINS).map(([name, v]) => `${name}==${v}`);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  log(`interop: creating a venv in ${dir} with ${python}`);
  run(python, ['-m', 'venv', join(dir, 'venv')], 'creating the venv');
  log(`interop: pip install ${specs.join(' ')}`);
  run(paths.python, ['-m', 'pip', 'install', '--quiet', ...specs], 'pip install');

  log('interop: downloading the agent-client-protocol sdist for its example agents');
  const sdistDir = join(dir, 'sdist');
  run(
    paths.python,
    [
      '-m',
      'pip',
      'download',
      '--quiet',
      '--no-deps',
      '--no-binary',
      ':all:',
      '--dest',
      sdistDir,
      `agent-client-protocol==${PINS['agent-client-protocol']}`,
    ],
    'pip download of the SDK sdist',
  );
  const archive = readdirSync(sdistDir).find((f) => f.endsWith('.tar.gz'));
  if (!archive) throw new PeerSetupError(`pip download left no .tar.gz in ${sdistDir}`);
  // Python's tarfile extracts the examples (no dependence on a tar binary).
  run(
    paths.python,
    [
      '-c',
      `import sys, tarfile, os
archive, dest, names = sys.argv[1], sys.argv[2], sys.argv[3:]
os.makedirs(dest, exist_ok=True)
found = {}
with tarfile.open(archive) as tar:
    for m in tar.getmembers():
        parts = m.name.split('/')
        if len(parts) == 3 and parts[1] == 'examples' and parts[2] in names and m.isfile():
            found[parts[2]] = tar.extractfile(m).read()
missing = [n for n in names if n not in found]
if missing:
    sys.exit('examples not in the sdist: ' + ', '.join(missing))
for n, data in found.items():
    with open(os.path.join(dest, n), 'wb') as f:
        f.write(data)`,
      join(sdistDir, archive),
      join(dir, 'sdk-examples'),
      ...SDK_EXAMPLES,
    ],
    'extracting the SDK examples',
  );

  const versions = run(
    paths.python,
    [
      '-c',
      'import importlib.metadata as m, json; print(json.dumps({n: m.version(n) for n in ["agentao", "agent-client-protocol"]}))',
    ],
    'checking the installed versions',
  );
  if (JSON.stringify(JSON.parse(versions)) !== JSON.stringify(PINS)) {
    throw new PeerSetupError(`installed ${versions.trim()}, wanted ${JSON.stringify(PINS)}`);
  }
  writeFileSync(paths.stamp, JSON.stringify({ pins: PINS, python, installedAt: new Date().toISOString() }, null, 2));
}

if (import.meta.url === `file://${process.argv[1]}`) {
  try {
    const paths = setupPeers();
    if (process.argv.includes('--print')) console.log(JSON.stringify(paths, null, 2));
    else console.error(`interop: peers ready in ${paths.dir}`);
  } catch (err) {
    console.error(err.message);
    process.exit(1);
  }
}
