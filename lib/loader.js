'use strict';
// Finds and loads this package's native binary, once, on first use.
//
// Loading is lazy so that a bundled host (esbuild, webpack, a VSIX, an
// Electron app) can say where the `.node` is before anything needs it:
// `loadNativeBinding(file)`. That choice belongs to this copy of the package
// only (no environment variable that would redirect every napi-rs addon in
// the process). Without it the search is, in order:
//
//   1. `acp-native.<platform>.node` next to this file and in the directory
//      above it (a local `npm run build`, or a bundle with the binary copied
//      next to it);
//   2. the platform package `acp-native-<platform>` (the npm install).
//
// A path inside an Electron `*.asar` archive is tried first at its
// `*.asar.unpacked` sibling, where `asarUnpack` puts native binaries.

const { existsSync, readFileSync } = require('node:fs');
const { dirname, join, resolve } = require('node:path');
const { AcpError } = require('./errors.js');

/** The ACP protocol version this build speaks; the binary must agree. */
const PROTOCOL_VERSION = 1;
const PACKAGE = 'acp-native';
const VERSION = require('../package.json').version;
const DOCS = 'https://github.com/acp-native/acp-native#bundling';

// Bundlers rewrite `require` (webpack turns a computed one into a dead
// context module); the binary must be loaded by Node's own.
/* global __webpack_require__, __non_webpack_require__ */
const nodeRequire = typeof __webpack_require__ === 'function' ? __non_webpack_require__ : require;

/** napi-rs platform name → Rust target, for every binary this package publishes. */
const TRIPLES = {
  'linux-x64-gnu': 'x86_64-unknown-linux-gnu',
  'linux-arm64-gnu': 'aarch64-unknown-linux-gnu',
  'linux-x64-musl': 'x86_64-unknown-linux-musl',
  'linux-arm64-musl': 'aarch64-unknown-linux-musl',
  'darwin-x64': 'x86_64-apple-darwin',
  'darwin-arm64': 'aarch64-apple-darwin',
  'win32-x64-msvc': 'x86_64-pc-windows-msvc',
  'win32-arm64-msvc': 'aarch64-pc-windows-msvc',
};

function isMusl() {
  // glibc's ldd is a script that names glibc; musl's is the loader itself.
  try {
    return readFileSync('/usr/bin/ldd', 'latin1').includes('musl');
  } catch {
    // No ldd (distroless images): a glibc Node reports its glibc version.
    const report = /** @type {{ header?: { glibcVersionRuntime?: string } } | undefined} */ (
      process.report?.getReport?.()
    );
    const header = report?.header;
    return !header?.glibcVersionRuntime;
  }
}

/** This process's napi-rs platform name, e.g. `linux-x64-gnu`. */
function currentPlatform() {
  const base = `${process.platform}-${process.arch}`;
  if (process.platform === 'linux') return `${base}-${isMusl() ? 'musl' : 'gnu'}`;
  if (process.platform === 'win32') return `${base}-msvc`;
  return base;
}

/** `…/app.asar/x` → `…/app.asar.unpacked/x`; null outside an asar archive. */
function unpackedPath(file) {
  const mapped = file.replace(/([\\/][^\\/]+\.asar)(?=[\\/])/, '$1.unpacked');
  return mapped === file ? null : mapped;
}

let loaded = null; // { binding, file }

/** Load `file` (or its asar-unpacked sibling) and check it is our binary. */
function loadFile(file) {
  const unpacked = unpackedPath(file);
  const actual = unpacked && existsSync(unpacked) ? unpacked : file;
  const binding = nodeRequire(actual);
  if (typeof binding?.protocolVersion !== 'function' || typeof binding.AgentConnection !== 'function') {
    throw new Error(
      'not an acp-native binary (a bundler may have replaced it with a file path: load it with loadNativeBinding)',
    );
  }
  const speaks = binding.protocolVersion();
  if (speaks !== PROTOCOL_VERSION)
    throw new Error(`this binary speaks ACP ${speaks}, the JavaScript ${PROTOCOL_VERSION}`);
  return { binding, file: actual };
}

function missing(file) {
  const unpacked = unpackedPath(file);
  return !existsSync(file) && !(unpacked && existsSync(unpacked));
}

function describe(file) {
  const unpacked = unpackedPath(file);
  return unpacked ? `${file} (or ${unpacked})` : file;
}

function loadError(platform, tried, explicit) {
  const triple = TRIPLES[platform];
  const node = `Node ${process.version}, Node-API ${process.versions.napi}`;
  const lines = [
    triple
      ? `${PACKAGE} cannot load its native binary for ${platform} (Rust target ${triple}; ${node}).`
      : `${PACKAGE} has no prebuilt binary for ${platform} (${node}); it is built for ${Object.keys(TRIPLES).join(', ')}. Build it from source (npm run build in a clone) and load it with loadNativeBinding(file).`,
    'Tried:',
    ...tried.map((t) => `  - ${t.where}: ${t.reason}`),
  ];
  if (triple && !explicit) {
    lines.push(
      `Installed from npm? The platform package ${PACKAGE}-${platform} is an optional dependency: reinstall on this machine without --omit=optional (a lock file or node_modules copied from another OS or CPU lacks it).`,
    );
  }
  lines.push(
    `Bundled (esbuild, webpack, a VSIX, Electron)? Ship ${PACKAGE}.${platform}.node with the bundle and call loadNativeBinding(file) before the first client, or copy it next to the bundle; in Electron, unpack it from app.asar (asarUnpack). See ${DOCS}`,
  );
  return new AcpError('ERR_ACP_NATIVE_BINDING', lines.join('\n'), {
    platform,
    triple,
    tried,
    cause: tried.find((t) => t.error)?.error,
  });
}

/** Search the default places (see the top of this file). */
function search() {
  const platform = currentPlatform();
  const binary = `${PACKAGE}.${platform}.node`;
  const tried = [];
  const attempt = (where, file) => {
    try {
      return loadFile(file);
    } catch (error) {
      tried.push({ where, file, reason: error.message.split('\n')[0], error });
      return null;
    }
  };
  // An ESM bundle has no __dirname: only loadNativeBinding(file) works there.
  const here = typeof __dirname === 'string' ? [__dirname, join(__dirname, '..')] : [];
  for (const dir of new Set(here)) {
    const file = join(dir, binary);
    if (missing(file)) {
      tried.push({ where: describe(file), file, reason: 'not found' });
      continue;
    }
    const found = attempt(file, file);
    if (found) return found;
  }
  const pkgName = `${PACKAGE}-${platform}`;
  let manifest;
  try {
    manifest = nodeRequire.resolve(`${pkgName}/package.json`);
  } catch {
    tried.push({ where: `package ${pkgName} (${binary})`, reason: 'not installed' });
  }
  if (manifest) {
    const file = join(dirname(manifest), binary);
    let version;
    try {
      version = JSON.parse(readFileSync(manifest, 'utf8')).version;
    } catch (error) {
      version = `unreadable (${error.message})`;
    }
    if (version !== VERSION) {
      tried.push({
        where: `package ${pkgName} at ${dirname(manifest)}`,
        file,
        reason: `version ${version}, but ${PACKAGE} is ${VERSION}: reinstall`,
      });
    } else if (missing(file)) {
      tried.push({ where: describe(file), file, reason: 'not found (the package is installed but lacks its binary)' });
    } else {
      const found = attempt(file, file);
      if (found) return found;
    }
  }
  throw loadError(platform, tried, false);
}

/**
 * Load the native binary now: from `file` if given (the path of an
 * `acp-native.<platform>.node`; relative to the cwd), else from the default places. Call it before
 * the first client when a bundle moved the binary; later calls with the same
 * file (or none) return the loaded one. Returns the absolute path loaded.
 */
function loadNativeBinding(file) {
  if (file !== undefined && (typeof file !== 'string' || file === '')) {
    throw new AcpError('ERR_ACP_INVALID_ARGUMENT', 'loadNativeBinding(file): file must be a path string');
  }
  // A relative path is taken from the cwd (a bare name would be a package to `require`).
  if (file !== undefined) file = resolve(file);
  if (loaded) {
    if (file === undefined || loaded.requested === file || loaded.file === file) return loaded.file;
    throw new AcpError(
      'ERR_ACP_INVALID_ARGUMENT',
      `loadNativeBinding(${JSON.stringify(file)}): the native binary is already loaded from ${loaded.file}; call loadNativeBinding before the first client`,
    );
  }
  if (file === undefined) {
    loaded = search();
  } else {
    try {
      loaded = { ...loadFile(file), requested: file };
    } catch (error) {
      const reason = missing(file) ? 'not found' : error.message.split('\n')[0];
      throw loadError(currentPlatform(), [{ where: describe(file), file, reason, error }], true);
    }
  }
  return loaded.file;
}

function binding() {
  if (!loaded) loadNativeBinding();
  return loaded.binding;
}

// `native.X` anywhere in lib/ loads the binary on first use.
const native = new Proxy(Object.create(null), {
  get: (_, name) => binding()[name],
});

module.exports = { native, loadNativeBinding, currentPlatform, unpackedPath, PROTOCOL_VERSION, TRIPLES };
