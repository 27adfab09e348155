'use strict';

// Build one agent version into a staging directory and return its install
// record (what launch.js turns into a command line). Nothing here runs a
// shell or a package's install scripts:
//  - npx: `npm install --ignore-scripts <name>@<exact version>` into the
//    staging dir; the launch is `<node> <bin entry>` from its package.json;
//  - uvx: `python -m venv`, then `pip install --only-binary=:all: <name>==<version>`
//    in it (wheels only: no build code runs, unless allowSourceBuilds); the
//    launch is the venv's python calling the package's console script;
//  - binary: the archive for this platform, downloaded (capped, sha256
//    checked), unpacked by extract.js.

const fs = require('node:fs');
const path = require('node:path');
const { execFile } = require('node:child_process');
const { AcpError } = require('../errors.js');
const { downloadToFile } = require('./download.js');
const { extractArchive, archiveKind, safeSegments } = require('./extract.js');

const installError = (message, fields) => new AcpError('ERR_ACP_AGENT_INSTALL', message, fields);

/** Run a tool (no shell), keeping the tail of its output for the error. */
function run(command, args, { cwd, env, signal, timeoutMs = 10 * 60_000, what }) {
  return new Promise((resolve, reject) => {
    execFile(
      command,
      args,
      {
        cwd,
        env: { ...process.env, ...env },
        signal,
        timeout: timeoutMs,
        maxBuffer: 16 * 1024 * 1024,
        windowsHide: true,
      },
      (err, stdout, stderr) => {
        if (!err) return resolve(stdout);
        const tail = `${stdout ?? ''}\n${stderr ?? ''}`.trim().split('\n').slice(-20).join('\n');
        if (err.name === 'AbortError') return reject(new AcpError('ERR_ACP_ABORTED', `${what} was aborted`, {}));
        reject(
          installError(
            `${what} failed (${err.code === 'ENOENT' ? `${command} not found` : `exit ${err.code ?? err.signal}`}):\n${tail}`,
            { output: tail },
          ),
        );
      },
    );
  });
}

/**
 * How to run npm without a shim or shell: `<node> <npm-cli.js>`, the
 * npm-cli.js next to `node` (a Node install), else the one behind `npm` on
 * PATH (a symlink on POSIX; `npm.cmd`'s directory on Windows, where a .cmd
 * cannot run without a shell). Under Electron the Node is Electron itself,
 * with ELECTRON_RUN_AS_NODE=1. `[command, ...args]` and the env to add.
 */
function defaultNpm(
  node = process.execPath,
  { pathEnv = process.env.PATH ?? '', electron = Boolean(process.versions.electron) } = {},
) {
  const env = electron && node === process.execPath ? { ELECTRON_RUN_AS_NODE: '1' } : {};
  const nextToNode = [
    path.join(path.dirname(node), '..', 'lib', 'node_modules', 'npm', 'bin', 'npm-cli.js'),
    path.join(path.dirname(node), 'node_modules', 'npm', 'bin', 'npm-cli.js'),
  ];
  const onPath = [];
  for (const dir of pathEnv.split(path.delimiter).filter(Boolean)) {
    onPath.push(path.join(dir, 'node_modules', 'npm', 'bin', 'npm-cli.js'));
    try {
      const real = fs.realpathSync(path.join(dir, 'npm'));
      if (path.basename(real) === 'npm-cli.js') onPath.push(real);
    } catch {}
  }
  const cli = [...nextToNode, ...onPath].find((f) => fs.existsSync(f));
  if (cli) return { command: [node, cli], env };
  return { command: ['npm'], env: {} };
}

/** The bin entry of an installed package, as a path relative to `root`. */
function npmEntry(root, pkgName, cmd) {
  const pkgDir = path.join(root, 'node_modules', ...pkgName.split('/'));
  let manifest;
  try {
    manifest = JSON.parse(fs.readFileSync(path.join(pkgDir, 'package.json'), 'utf8'));
  } catch (err) {
    throw installError(`${pkgName} was installed without a readable package.json: ${err.message}`);
  }
  let bin = manifest.bin;
  if (typeof bin === 'string') bin = { [pkgName.split('/').pop()]: bin };
  if (!bin || typeof bin !== 'object') throw installError(`${pkgName} has no "bin" entry to launch`);
  const names = Object.keys(bin);
  const wanted = cmd ? path.basename(cmd) : undefined;
  const name =
    (wanted && names.includes(wanted) && wanted) ||
    (names.includes(pkgName.split('/').pop()) && pkgName.split('/').pop()) ||
    (names.length === 1 && names[0]);
  if (!name)
    throw installError(
      `${pkgName} has several bins (${names.slice(0, 10).join(', ')}); the index must name one with "cmd"`,
    );
  const entry = path.resolve(pkgDir, String(bin[name]));
  const realRoot = fs.realpathSync.native(root);
  let realEntry;
  try {
    realEntry = fs.realpathSync.native(entry);
  } catch {
    throw installError(`${pkgName}'s bin ${name} (${bin[name]}) does not exist`);
  }
  if (!realEntry.startsWith(realRoot + path.sep))
    throw installError(`${pkgName}'s bin ${name} points outside the install`);
  return path.relative(realRoot, realEntry).split(path.sep).join('/');
}

async function installNpx(dist, staging, o) {
  const spec = `${dist.package}@${dist.version}`;
  // A package.json of its own, so npm installs here and nowhere up the tree.
  fs.writeFileSync(path.join(staging, 'package.json'), '{"private":true}\n');
  const found = o.npmCommand ? { command: o.npmCommand, env: {} } : defaultNpm(o.node);
  const [npm, ...npmArgs] = found.command;
  o.onProgress?.({ phase: 'install', message: `npm install ${spec}` });
  await run(
    npm,
    [
      ...npmArgs,
      'install',
      '--ignore-scripts',
      '--no-audit',
      '--no-fund',
      '--omit=dev',
      '--no-save',
      '--prefer-offline',
      '--loglevel=error',
      '--prefix',
      staging,
      spec,
    ],
    {
      cwd: staging,
      env: { npm_config_update_notifier: 'false', ...found.env, ...o.env },
      signal: o.signal,
      what: `npm install ${spec}`,
    },
  );
  return {
    kind: 'npx',
    package: dist.package,
    packageVersion: dist.version,
    entry: npmEntry(staging, dist.package, dist.cmd),
  };
}

function venvLayout(root) {
  const win = process.platform === 'win32';
  const bin = path.join(root, 'venv', win ? 'Scripts' : 'bin');
  return { bin, python: path.join(bin, win ? 'python.exe' : 'python') };
}

async function installUvx(dist, staging, o) {
  const python = o.python ?? (process.platform === 'win32' ? 'python' : 'python3');
  const spec = `${dist.package}==${dist.version}`;
  o.onProgress?.({ phase: 'install', message: `python -m venv; pip install ${spec}` });
  await run(python, ['-m', 'venv', path.join(staging, 'venv')], {
    cwd: staging,
    env: o.env,
    signal: o.signal,
    what: 'python -m venv',
  });
  const { bin, python: venvPython } = venvLayout(staging);
  // Wheels only: building a source distribution runs the package's own code at install time.
  const binaryOnly = o.allowSourceBuilds === true ? [] : ['--only-binary=:all:'];
  await run(
    venvPython,
    ['-m', 'pip', 'install', '--no-input', '--disable-pip-version-check', '--quiet', ...binaryOnly, spec],
    {
      cwd: staging,
      env: { PIP_NO_INPUT: '1', ...o.env },
      signal: o.signal,
      what: `pip install ${spec}`,
    },
  );
  const script = dist.cmd ?? dist.package;
  safeSegments(script);
  const candidates = [script, `${script}.exe`, `${script}-script.py`];
  const found = candidates.find((c) => fs.existsSync(path.join(bin, c)));
  if (!found) throw installError(`${spec} installed no entry script named ${script}`);
  return {
    kind: 'uvx',
    package: dist.package,
    packageVersion: dist.version,
    python: path.relative(staging, venvPython).split(path.sep).join('/'),
    script,
  };
}

async function installBinary(target, staging, o) {
  const kind = archiveKind(target.archive);
  const file = path.join(staging, '.download');
  o.onProgress?.({ phase: 'download', receivedBytes: 0, totalBytes: undefined, url: target.archive });
  const got = await downloadToFile(target.archive, file, {
    sha256: target.sha256,
    maxBytes: o.limits?.maxDownloadBytes,
    timeoutMs: o.limits?.downloadTimeoutMs,
    stallMs: o.limits?.stallMs,
    maxRedirects: o.limits?.maxRedirects,
    signal: o.signal,
    fetchImpl: o.fetch,
    onProgress: (p) => o.onProgress?.({ phase: 'download', ...p }),
  });
  o.onProgress?.({ phase: 'extract' });
  const dist = path.join(staging, 'dist');
  fs.mkdirSync(dist);
  try {
    await extractArchive(file, kind, dist, {
      limits: { maxEntries: o.limits?.maxEntries, maxTotalBytes: o.limits?.maxUnpackedBytes },
      rawName: path.basename(target.cmd),
    });
  } finally {
    fs.rmSync(file, { force: true });
  }
  const cmd = path.join(dist, ...safeSegments(target.cmd));
  let st;
  try {
    st = fs.statSync(cmd);
  } catch {
    throw installError(`the archive has no ${target.cmd}`);
  }
  if (!st.isFile()) throw installError(`${target.cmd} in the archive is not a file`);
  const real = fs.realpathSync.native(cmd);
  if (!real.startsWith(fs.realpathSync.native(dist) + path.sep))
    throw installError(`${target.cmd} resolves outside the install`);
  if (process.platform !== 'win32') fs.chmodSync(cmd, st.mode | 0o500);
  return {
    kind: 'binary',
    archive: target.archive,
    sha256: got.sha256,
    verified: target.sha256 !== undefined,
    entry: `dist/${safeSegments(target.cmd).join('/')}`,
  };
}

module.exports = { installNpx, installUvx, installBinary, npmEntry, defaultNpm };
