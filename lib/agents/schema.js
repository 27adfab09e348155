'use strict';

// The ACP Agent Registry index, checked by hand against what both schema
// generations accept (registry.json: `{version, agents[], extensions?}`).
// Anything that ends up in a path, a command line or a URL is held to a
// stricter shape than the registry's own schema: an id or version names a
// store directory, a package spec becomes an `npm`/`pip` argument.
//
// Regexes here have no `m` flag, so `$` matches only at the very end: the
// id `"evil\n"` fails (the registry's Python jsonschema lets it through).
// Duplicate keys never reach this file: `JSON.parse` keeps the last one.

const { AcpError } = require('../errors.js');

const ID = /^[a-z][a-z0-9-]*$/;
// A version names a directory: no separators, no `..`, bounded.
const VERSION = /^[0-9A-Za-z][0-9A-Za-z.+_-]*$/;
const TARGETS = [
  'darwin-aarch64',
  'darwin-x86_64',
  'linux-aarch64',
  'linux-x86_64',
  'windows-aarch64',
  'windows-x86_64',
];
const SHA256 = /^[0-9a-fA-F]{64}$/;
// npm: `name`, `@scope/name`, either with `@<exact semver>`.
const NPM_PACKAGE =
  /^((?:@[a-z0-9][a-z0-9._-]*\/)?[a-z0-9][a-z0-9._-]*)(?:@([0-9]+\.[0-9]+\.[0-9]+(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?))?$/;
// PyPI: `name`, `name==ver` or `name@ver` (uvx's own spelling).
const PYPI_PACKAGE = /^([A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)(?:(?:==|@)([0-9A-Za-z][0-9A-Za-z.+!_-]*))?$/;
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

const LIMITS = {
  agents: 1000,
  idLength: 64,
  versionLength: 64,
  text: 4096,
  args: 64,
  argLength: 4096,
  env: 64,
  url: 2048,
};

class IndexError extends Error {}

/** @type {(where: string, message: string) => never} */
const fail = (where, message) => {
  throw new IndexError(`${where} ${message}`);
};

function str(where, v, max = LIMITS.text) {
  if (typeof v !== 'string' || v === '') fail(where, 'must be a non-empty string');
  if (v.length > max) fail(where, `is longer than ${max} characters`);
  return v;
}

const optionalStr = (where, v, max) => (v === undefined ? undefined : str(where, v, max));

function args(where, v) {
  if (v === undefined) return [];
  if (!Array.isArray(v) || v.length > LIMITS.args) fail(where, `must be an array of at most ${LIMITS.args} strings`);
  return v.map((a, i) => {
    if (typeof a !== 'string' || a.length > LIMITS.argLength) fail(`${where}[${i}]`, 'must be a string');
    return a;
  });
}

function env(where, v) {
  if (v === undefined) return {};
  if (v === null || typeof v !== 'object' || Array.isArray(v)) fail(where, 'must be an object');
  const entries = Object.entries(v);
  if (entries.length > LIMITS.env) fail(where, `has more than ${LIMITS.env} variables`);
  for (const [k, val] of entries) {
    if (!ENV_NAME.test(k)) fail(where, `has a bad variable name ${JSON.stringify(k)}`);
    if (typeof val !== 'string' || val.length > LIMITS.argLength) fail(`${where}.${k}`, 'must be a string');
  }
  return Object.fromEntries(entries);
}

/** A relative path inside the install (`./bin/agent`, `agent.exe`): no root, no `..`. */
function relativePath(where, v) {
  str(where, v, 1024);
  const parts = v.split(/[\\/]+/);
  if (/^[\\/]/.test(v) || /^[A-Za-z]:/.test(v) || parts.includes('..') || v.includes('\0')) {
    fail(where, 'must be a relative path inside the install (no root, drive or `..`)');
  }
  return v;
}

function url(where, v) {
  str(where, v, LIMITS.url);
  let u;
  try {
    u = new URL(v);
  } catch {
    fail(where, 'must be a URL');
  }
  if (u.protocol !== 'https:' && u.protocol !== 'http:') fail(where, 'must be an http(s) URL');
  return u.href;
}

function object(where, v) {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) fail(where, 'must be an object');
  return v;
}

function binaryTarget(where, t) {
  object(where, t);
  const sha256 = t.sha256 === undefined ? undefined : t.sha256;
  if (sha256 !== undefined && (typeof sha256 !== 'string' || !SHA256.test(sha256)))
    fail(`${where}.sha256`, 'must be 64 hex digits');
  return {
    archive: url(`${where}.archive`, t.archive),
    cmd: relativePath(`${where}.cmd`, t.cmd),
    args: args(`${where}.args`, t.args),
    env: env(`${where}.env`, t.env),
    sha256: sha256?.toLowerCase(),
  };
}

function packageDist(where, d, kind, version) {
  object(where, d);
  const spec = str(`${where}.package`, d.package, 256);
  const m = (kind === 'npx' ? NPM_PACKAGE : PYPI_PACKAGE).exec(spec);
  if (!m)
    fail(`${where}.package`, `is not a ${kind === 'npx' ? 'npm' : 'PyPI'} package name with an optional exact version`);
  return {
    package: m[1],
    // Unpinned: the agent's own version (the store installs exact versions only).
    version: m[2] ?? version,
    cmd: d.cmd === undefined ? undefined : relativePath(`${where}.cmd`, d.cmd),
    args: args(`${where}.args`, d.args),
    env: env(`${where}.env`, d.env),
  };
}

/** One agent entry → its checked, normalized form (throws IndexError). */
function checkAgent(a, where = 'agent') {
  object(where, a);
  if (typeof a.id !== 'string' || a.id.length > LIMITS.idLength || !ID.test(a.id)) {
    fail(`${where}.id`, `must match ^[a-z][a-z0-9-]*$ (at most ${LIMITS.idLength} characters)`);
  }
  where = `agent ${JSON.stringify(a.id)}`;
  const version = str(`${where}.version`, a.version, LIMITS.versionLength);
  if (!VERSION.test(version) || version.includes('..'))
    fail(`${where}.version`, 'must be a version (letters, digits, . + _ -)');
  const d = object(`${where}.distribution`, a.distribution);
  const distribution = {};
  if (d.binary !== undefined) {
    object(`${where}.distribution.binary`, d.binary);
    distribution.binary = {};
    // Targets this code does not know (a newer schema) are left out, not fatal.
    for (const target of TARGETS) {
      if (d.binary[target] !== undefined)
        distribution.binary[target] = binaryTarget(`${where}.distribution.binary.${target}`, d.binary[target]);
    }
  }
  for (const kind of ['npx', 'uvx']) {
    if (d[kind] !== undefined)
      distribution[kind] = packageDist(`${where}.distribution.${kind}`, d[kind], kind, version);
  }
  if (Object.keys(distribution).length === 0) fail(`${where}.distribution`, 'has none of binary, npx, uvx');
  return {
    id: a.id,
    name: str(`${where}.name`, a.name, 256),
    version,
    description: optionalStr(`${where}.description`, a.description) ?? '',
    repository: optionalStr(`${where}.repository`, a.repository, LIMITS.url),
    website: optionalStr(`${where}.website`, a.website, LIMITS.url),
    license: optionalStr(`${where}.license`, a.license, 256),
    authors: Array.isArray(a.authors) ? a.authors.filter((x) => typeof x === 'string').slice(0, 32) : [],
    icon: optionalStr(`${where}.icon`, a.icon, LIMITS.url),
    distribution,
  };
}

/**
 * Check a parsed index. Returns `{version, agents, problems}`: an entry that
 * fails is left out and said in `problems` (one bad agent does not hide the
 * others); a malformed top level, two entries with one id, or too many
 * agents throw ERR_ACP_AGENT_INDEX.
 */
function checkIndex(index, source = 'index') {
  try {
    object(source, index);
    if (index.version !== undefined && typeof index.version !== 'string') fail(`${source}.version`, 'must be a string');
    if (!Array.isArray(index.agents)) fail(`${source}.agents`, 'must be an array');
    if (index.agents.length > LIMITS.agents) fail(`${source}.agents`, `has more than ${LIMITS.agents} entries`);
    const agents = [];
    const problems = [];
    const seen = new Set();
    index.agents.forEach((a, i) => {
      try {
        const agent = checkAgent(a, `${source}.agents[${i}]`);
        if (seen.has(agent.id)) fail(`${source}.agents[${i}].id`, `${JSON.stringify(agent.id)} appears twice`);
        seen.add(agent.id);
        agents.push(agent);
      } catch (err) {
        if (!(err instanceof IndexError)) throw err;
        problems.push(err.message);
        if (err.message.includes('appears twice')) throw err;
      }
    });
    return { version: index.version ?? '', agents, problems };
  } catch (err) {
    if (err instanceof IndexError)
      throw new AcpError('ERR_ACP_AGENT_INDEX', `the agent index is invalid: ${err.message}`, { source });
    throw err;
  }
}

/** This machine's registry target (`linux-x86_64`…), or null. */
function currentTarget(platform = process.platform, arch = process.arch) {
  const os = { darwin: 'darwin', linux: 'linux', win32: 'windows' }[platform];
  const cpu = { x64: 'x86_64', arm64: 'aarch64' }[arch];
  return os && cpu ? `${os}-${cpu}` : null;
}

module.exports = { checkIndex, checkAgent, currentTarget, IndexError, ID, TARGETS };
