'use strict';

// Writing a file whose name the user gave, when what is there may be a
// trap: the target is never opened (a FIFO's open blocks a libuv pool
// thread until a reader comes, a device swallows or blocks) and never
// followed (a symlink could point anywhere). The data goes to a new file
// in the same directory (O_CREAT|O_EXCL|O_NOFOLLOW: nothing that was
// there), then rename() replaces the target's directory entry.

const fs = require('node:fs');
const fsp = require('node:fs/promises');
const path = require('node:path');
const { randomBytes } = require('node:crypto');
const { AcpError } = require('./errors.js');

const { O_WRONLY, O_CREAT, O_EXCL } = fs.constants;
const O_NOFOLLOW = fs.constants.O_NOFOLLOW ?? 0; // not on Windows, where O_EXCL does not follow either
const TEMP_FLAGS = O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW;

/** What a non-regular file is, for the message. */
function fileType(stat) {
  if (stat.isSymbolicLink()) return 'symlink';
  if (stat.isFIFO()) return 'fifo';
  if (stat.isCharacterDevice() || stat.isBlockDevice()) return 'device';
  if (stat.isDirectory()) return 'directory';
  if (stat.isSocket()) return 'socket';
  return 'other';
}

const NAMES = {
  symlink: 'a symbolic link',
  fifo: 'a FIFO',
  device: 'a device',
  directory: 'a directory',
  socket: 'a socket',
  other: 'not a regular file',
};

function unsafe(target, type) {
  return new AcpError(
    'ERR_ACP_UNSAFE_PATH',
    `refusing to write ${target}: it is ${NAMES[type]} (only regular files are replaced)`,
    {
      path: target,
      fileType: type,
    },
  );
}

/** Throws ERR_ACP_UNSAFE_PATH when `stat` (an lstat, or undefined for no file) is not a regular file. */
function checkTarget(target, stat) {
  if (stat && !stat.isFile()) throw unsafe(target, fileType(stat));
}

/**
 * The mode the file gets once its data is complete: a replaced file keeps
 * its own (a history may hold secrets its owner locked down) but not the
 * setuid/setgid bits (as a write through it would clear them), a new one
 * gets what a plain write would give it.
 */
function finalMode(before) {
  return before ? before.mode & 0o1777 : 0o666 & ~process.umask();
}

/**
 * A file system that refuses chmod (vfat, some network mounts) leaves the
 * file private: never less safe than asked, so not a failure.
 */
function chmodRefused(err) {
  if (err.code === 'EPERM' || err.code === 'ENOTSUP' || err.code === 'EOPNOTSUPP' || err.code === 'EINVAL') return;
  throw err;
}

/** A fresh temporary name next to `target` (same directory: rename stays on one file system). */
function tempName(target) {
  return path.join(
    path.dirname(target),
    `.${path.basename(target)}.${process.pid}-${randomBytes(6).toString('hex')}.tmp`,
  );
}

/**
 * Write `data` to `target` as a regular file: a symlink, FIFO, device,
 * directory or socket there is an ERR_ACP_UNSAFE_PATH error before anything
 * is written; otherwise the data is written to a temporary file in the same
 * directory and renamed over the target. Never opens the target.
 */
async function writeFileSafely(target, data) {
  const before = await fsp.lstat(target).catch(missing);
  checkTarget(target, before);
  const temp = tempName(target);
  // Private until complete: a descriptor opened while it was wider would
  // outlive a later chmod and read (or write) the data.
  const handle = await fsp.open(temp, TEMP_FLAGS, 0o600);
  let open = true;
  try {
    await handle.writeFile(data);
    await handle.sync();
    await handle.chmod(finalMode(before)).catch(chmodRefused);
    open = false;
    await handle.close();
  } catch (err) {
    if (open) await handle.close().catch(() => {});
    await fsp.rm(temp, { force: true });
    throw err;
  }
  try {
    // Checked again right before: a trap placed while we wrote is reported, not replaced silently.
    checkTarget(target, await fsp.lstat(target).catch(missing));
    await fsp.rename(temp, target);
  } catch (err) {
    await fsp.rm(temp, { force: true });
    throw err;
  }
}

function missing(err) {
  if (err.code === 'ENOENT') return undefined;
  throw err;
}

/**
 * The same for a file written as it goes (a recording): `open()` checks the
 * target and creates the temporary file; `write(text)` appends
 * synchronously (a regular file we created: never blocks on a reader);
 * `commit()` renames it over the target; `discard()` removes it.
 * `tempPath` says where the data is until the commit.
 */
class SafeFileWriter {
  #fd;
  #target;
  #mode;
  tempPath;

  constructor(target) {
    this.#target = target;
    let stat;
    try {
      stat = fs.lstatSync(target);
    } catch (err) {
      missing(err);
    }
    checkTarget(target, stat);
    this.#mode = finalMode(stat);
    this.tempPath = tempName(target);
    this.#fd = fs.openSync(this.tempPath, TEMP_FLAGS, 0o600); // private until commit(), as above
  }

  write(text) {
    fs.writeSync(this.#fd, text);
  }

  commit() {
    try {
      fs.fchmodSync(this.#fd, this.#mode);
    } catch (err) {
      chmodRefused(err);
    }
    fs.closeSync(this.#fd);
    let stat;
    try {
      stat = fs.lstatSync(this.#target);
    } catch (err) {
      missing(err);
    }
    checkTarget(this.#target, stat);
    fs.renameSync(this.tempPath, this.#target);
  }

  discard() {
    try {
      fs.closeSync(this.#fd);
    } catch {
      // already closed by a failed commit
    }
    fs.rmSync(this.tempPath, { force: true });
  }
}

module.exports = { writeFileSafely, SafeFileWriter };
