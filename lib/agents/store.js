'use strict';

// The versioned agent store, in a directory the host chooses:
//
//   <storeDir>/
//     index/registry.json, index/meta.json   the last good index and its ETag
//     agents/<id>/<version>/install.json      what was installed, how to launch it
//     agents/<id>/<version>/probe.json        the last readiness probe of it
//     agents/<id>/<version>/…                 the package, venv or unpacked archive
//     pins.json                               { id: version } chosen by the host
//     locks/<id>@<version>.lock               one installer at a time (O_EXCL)
//     tmp/                                    staging: built here, renamed into place
//
// A version directory appears whole or not at all: it is built in tmp/ and
// renamed into place (same filesystem), `install.json` written before the
// rename. If two processes race past the lock anyway (a stale lock taken
// over), the first rename wins and the loser throws its copy away.

const fs = require('node:fs');
const path = require('node:path');
const { randomBytes } = require('node:crypto');
const { AcpError } = require('../errors.js');
const { ID } = require('./schema.js');

const VERSION = /^[0-9A-Za-z][0-9A-Za-z.+_-]*$/;
// install.json's layout; a record of another format is reinstalled.
const FORMAT = 1;

function checkName(what, v, re) {
  if (typeof v !== 'string' || !re.test(v) || v.includes('..') || v.length > 64) {
    throw new AcpError(
      'ERR_ACP_INVALID_ARGUMENT',
      `${what} ${JSON.stringify(String(v).slice(0, 80))} is not a valid agent ${what}`,
      { argument: what },
    );
  }
  return v;
}

class Store {
  constructor(dir) {
    if (typeof dir !== 'string' || !path.isAbsolute(dir)) {
      throw new AcpError('ERR_ACP_INVALID_ARGUMENT', 'agents.storeDir must be an absolute path', {
        argument: 'agents.storeDir',
      });
    }
    this.dir = dir;
  }

  ensure() {
    for (const d of ['index', 'agents', 'locks', 'tmp'])
      fs.mkdirSync(path.join(this.dir, d), { recursive: true, mode: 0o755 });
  }

  agentDir(id) {
    return path.join(this.dir, 'agents', checkName('id', id, ID));
  }

  versionDir(id, version) {
    return path.join(this.agentDir(id), checkName('version', version, VERSION));
  }

  /** A fresh empty staging directory in tmp/. */
  staging(id) {
    this.ensure();
    const dir = path.join(this.dir, 'tmp', `${id}-${process.pid}-${randomBytes(6).toString('hex')}`);
    fs.mkdirSync(dir, { mode: 0o755 });
    return dir;
  }

  /** The install record of id@version, or null (none, unreadable, or of another store format). */
  record(id, version) {
    try {
      const record = JSON.parse(fs.readFileSync(path.join(this.versionDir(id, version), 'install.json'), 'utf8'));
      return record?.format === FORMAT ? record : null;
    } catch {
      return null;
    }
  }

  /** A version directory without a usable record (an older format): cleared for a new install. */
  clearUnusable(id, version) {
    if (!this.record(id, version) && fs.existsSync(this.versionDir(id, version))) this.remove(id, version);
  }

  /** Move a finished staging dir into place; false if another process got there first. */
  commit(staging, id, version, record) {
    fs.writeFileSync(
      path.join(staging, 'install.json'),
      `${JSON.stringify({ format: FORMAT, ...record }, null, 2)}\n`,
      { mode: 0o644 },
    );
    const dest = this.versionDir(id, version);
    fs.mkdirSync(path.dirname(dest), { recursive: true, mode: 0o755 });
    try {
      fs.renameSync(staging, dest);
      return true;
    } catch (err) {
      if (err.code !== 'ENOTEMPTY' && err.code !== 'EEXIST' && err.code !== 'EPERM') throw err;
      fs.rmSync(staging, { recursive: true, force: true });
      if (!this.record(id, version)) throw err;
      return false;
    }
  }

  /** Every installed `{id, version, record}`. */
  installed() {
    const out = [];
    let ids = [];
    try {
      ids = fs.readdirSync(path.join(this.dir, 'agents'));
    } catch {
      return out;
    }
    for (const id of ids.sort()) {
      if (!ID.test(id)) continue;
      let versions = [];
      try {
        versions = fs.readdirSync(path.join(this.dir, 'agents', id));
      } catch {
        continue;
      }
      for (const version of versions.sort()) {
        if (!VERSION.test(version)) continue;
        const record = this.record(id, version);
        if (record) out.push({ id, version, record });
      }
    }
    return out;
  }

  /** Delete id@version (or every version); moved aside first so a reader never sees half a tree. */
  remove(id, version) {
    const target = version === undefined ? this.agentDir(id) : this.versionDir(id, version);
    if (!fs.existsSync(target)) return false;
    this.ensure();
    const aside = path.join(this.dir, 'tmp', `removed-${id}-${randomBytes(6).toString('hex')}`);
    fs.renameSync(target, aside);
    fs.rmSync(aside, { recursive: true, force: true });
    return true;
  }

  pins() {
    try {
      const pins = JSON.parse(fs.readFileSync(path.join(this.dir, 'pins.json'), 'utf8'));
      return pins && typeof pins === 'object' && !Array.isArray(pins) ? pins : {};
    } catch {
      return {};
    }
  }

  setPin(id, version) {
    checkName('id', id, ID);
    const pins = this.pins();
    if (version === undefined) delete pins[id];
    else pins[id] = checkName('version', version, VERSION);
    this.ensure();
    const tmp = path.join(this.dir, 'tmp', `pins-${randomBytes(6).toString('hex')}.json`);
    fs.writeFileSync(tmp, `${JSON.stringify(pins, null, 2)}\n`);
    fs.renameSync(tmp, path.join(this.dir, 'pins.json'));
  }

  readJson(id, version, name) {
    try {
      return JSON.parse(fs.readFileSync(path.join(this.versionDir(id, version), name), 'utf8'));
    } catch {
      return null;
    }
  }

  writeJson(id, version, name, value) {
    const dir = this.versionDir(id, version);
    const tmp = path.join(dir, `.${name}.${randomBytes(4).toString('hex')}`);
    fs.writeFileSync(tmp, `${JSON.stringify(value, null, 2)}\n`);
    fs.renameSync(tmp, path.join(dir, name));
  }

  /**
   * Run `fn` holding the install lock of id@version. A lock whose holder
   * is dead (same host) or older than `staleMs` is taken over.
   *
   * @template T
   * @param {string} id
   * @param {string} version
   * @param {() => Promise<T>} fn
   * @param {{ staleMs?: number, pollMs?: number, signal?: AbortSignal }} [options]
   * @returns {Promise<T>}
   */
  async withLock(id, version, fn, { staleMs = 15 * 60_000, pollMs = 200, signal } = {}) {
    this.ensure();
    const file = path.join(
      this.dir,
      'locks',
      `${checkName('id', id, ID)}@${checkName('version', version, VERSION)}.lock`,
    );
    for (;;) {
      try {
        const fd = fs.openSync(file, 'wx', 0o644);
        fs.writeSync(fd, JSON.stringify({ pid: process.pid, at: Date.now() }));
        fs.closeSync(fd);
        break;
      } catch (err) {
        if (err.code !== 'EEXIST') throw err;
      }
      if (isStale(file, staleMs)) {
        // Take over by renaming the stale lock away: only one taker succeeds.
        try {
          fs.renameSync(file, `${file}.stale-${randomBytes(4).toString('hex')}`);
        } catch {}
        continue;
      }
      if (signal?.aborted)
        throw new AcpError('ERR_ACP_ABORTED', 'the install was aborted while waiting for another installer', {});
      await new Promise((r) => setTimeout(r, pollMs));
    }
    try {
      return await fn();
    } finally {
      fs.rmSync(file, { force: true });
      for (const f of fs.readdirSync(path.dirname(file))) {
        if (f.startsWith(`${path.basename(file)}.stale-`)) fs.rmSync(path.join(path.dirname(file), f), { force: true });
      }
    }
  }
}

function isStale(file, staleMs) {
  let info;
  try {
    info = JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch {
    // Being written right now, or garbage: stale only by age.
    try {
      return Date.now() - fs.statSync(file).mtimeMs > staleMs;
    } catch {
      return false;
    }
  }
  if (typeof info?.at === 'number' && Date.now() - info.at > staleMs) return true;
  if (Number.isInteger(info?.pid) && info.pid > 0 && info.pid !== process.pid) {
    try {
      process.kill(info.pid, 0); // existence check, no signal sent
    } catch (err) {
      return err.code === 'ESRCH';
    }
  }
  return false;
}

module.exports = { Store };
