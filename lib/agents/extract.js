'use strict';

// Unpack a downloaded agent archive into an empty directory, entry by entry,
// under rules this file enforces itself (the parsers only parse):
//  - a name may not be absolute (`/x`, `\x`, `C:x`), contain `..` or NUL;
//  - regular files, directories and symlinks only: devices, FIFOs and
//    sockets are refused; a hardlink is copied from an earlier file of the
//    same archive, never linked to anything outside it;
//  - every entry is written below a directory whose real path is inside the
//    target (a symlink planted earlier cannot redirect a later write), with
//    O_EXCL (no entry overwrites another), and no setuid/setgid bits;
//  - a symlink's target, resolved from its real directory, stays inside;
//    after unpacking every symlink in the tree must resolve inside; on
//    Windows a symlink is refused (creating one needs a privilege most
//    users lack, and its resolution differs by link type);
//  - caps on the number of entries and on the bytes written, and on the
//    bytes coming out of the decompressor (a bomb stops at the cap).
// Real paths come from the kernel (realpathSync.native): Node's JS
// realpath resolves `link/..` textually and misses a link to `.`.
// Breaking a rule throws ERR_ACP_AGENT_ARCHIVE; the caller throws the
// half-written directory away.

const fs = require('node:fs');
const path = require('node:path');
const zlib = require('node:zlib');
const stream = require('node:stream');
const { AcpError } = require('../errors.js');

const DEFAULT_LIMITS = { maxEntries: 20_000, maxTotalBytes: 2 * 1024 * 1024 * 1024 };

const archiveError = (message) => new AcpError('ERR_ACP_AGENT_ARCHIVE', message);

/** The archive format of a download, from its URL's path. */
function archiveKind(url) {
  const p = new URL(url).pathname.toLowerCase();
  if (p.endsWith('.zip')) return 'zip';
  if (p.endsWith('.tar.gz') || p.endsWith('.tgz')) return 'tar.gz';
  if (p.endsWith('.tar.bz2') || p.endsWith('.tbz2')) return 'tar.bz2';
  if (p.endsWith('.tar')) return 'tar';
  return 'raw';
}

/** `name` as checked path segments, or throw. */
function safeSegments(name) {
  if (typeof name !== 'string' || name === '' || name.includes('\0'))
    throw archiveError(`an entry has an empty or NUL-bearing name`);
  if (/^[\\/]/.test(name) || /^[A-Za-z]:/.test(name))
    throw archiveError(`entry ${JSON.stringify(name.slice(0, 200))} has an absolute path`);
  const parts = name.split(/[\\/]+/).filter((s) => s !== '' && s !== '.');
  if (parts.includes('..')) throw archiveError(`entry ${JSON.stringify(name.slice(0, 200))} climbs out with ..`);
  return parts;
}

const inside = (root, p) => p === root || p.startsWith(root.endsWith(path.sep) ? root : root + path.sep);

/** The state of one extraction: budgets, the real root, files written. */
class Target {
  /**
   * @param {string} dir
   * @param {{ maxEntries?: number, maxTotalBytes?: number }} [limits] an unset or undefined limit is the default
   */
  constructor(dir, limits) {
    this.root = fs.realpathSync.native(dir);
    // `??`, not a spread: `{maxEntries: undefined}` (a manager given no limits) keeps the default cap.
    this.limits = {
      maxEntries: limits?.maxEntries ?? DEFAULT_LIMITS.maxEntries,
      maxTotalBytes: limits?.maxTotalBytes ?? DEFAULT_LIMITS.maxTotalBytes,
    };
    this.entries = 0;
    this.bytes = 0;
    this.files = new Set(); // relative paths of regular files written, for hardlinks
    this.open = new Set(); // descriptors of files being written: closed on failure too
  }

  /** Close what a failure left open: Windows cannot remove a directory holding an open file. */
  closeAll() {
    for (const fd of this.open) fs.closeSync(fd);
    this.open.clear();
  }

  count() {
    if (++this.entries > this.limits.maxEntries)
      throw archiveError(`the archive has more than ${this.limits.maxEntries} entries`);
  }

  addBytes(n) {
    this.bytes += n;
    if (this.bytes > this.limits.maxTotalBytes)
      throw archiveError(`the archive unpacks to more than ${this.limits.maxTotalBytes} bytes`);
  }

  /** The absolute path for entry `name`, its parent created and checked real-inside. */
  place(name) {
    const parts = safeSegments(name);
    if (parts.length === 0) return null; // "./": the root itself
    const full = path.join(this.root, ...parts);
    const parent = path.dirname(full);
    fs.mkdirSync(parent, { recursive: true, mode: 0o755 });
    const realParent = fs.realpathSync.native(parent);
    if (!inside(this.root, realParent))
      throw archiveError(
        `entry ${JSON.stringify(name.slice(0, 200))} would be written through a symlink leaving the target`,
      );
    return { full: path.join(realParent, path.basename(full)), rel: parts.join('/'), realParent };
  }

  dir(name) {
    this.count();
    const at = this.place(name);
    if (!at) return;
    try {
      fs.mkdirSync(at.full, { mode: 0o755 });
    } catch (err) {
      if (err.code !== 'EEXIST' || !fs.lstatSync(at.full).isDirectory())
        throw archiveError(`entry ${JSON.stringify(name.slice(0, 200))} collides with another entry`);
    }
  }

  /** Open a new file for entry `name`; returns a writer. */
  file(name, mode) {
    this.count();
    const at = this.place(name);
    if (!at) throw archiveError('a file entry names the target directory itself');
    let fd;
    try {
      fd = fs.openSync(at.full, 'wx', (mode & 0o111 ? 0o755 : 0o644) & 0o777);
    } catch (err) {
      if (err.code === 'EEXIST')
        throw archiveError(`entry ${JSON.stringify(name.slice(0, 200))} appears twice or collides with a link`);
      throw err;
    }
    this.files.add(at.rel);
    this.open.add(fd);
    return {
      write: (buf) => {
        // Never a descriptor closed by closeAll(): its number may be another file's by now.
        if (!this.open.has(fd)) throw archiveError(`entry ${JSON.stringify(name.slice(0, 200))} written after the end`);
        this.addBytes(buf.length);
        fs.writeSync(fd, buf);
      },
      close: () => {
        if (this.open.delete(fd)) fs.closeSync(fd);
      },
    };
  }

  symlink(name, linkpath) {
    if (process.platform === 'win32')
      throw archiveError(`symlink ${JSON.stringify(String(name).slice(0, 200))}: symlinks are not unpacked on Windows`);
    this.count();
    const at = this.place(name);
    if (!at) throw archiveError('a symlink entry names the target directory itself');
    if (
      typeof linkpath !== 'string' ||
      linkpath === '' ||
      linkpath.includes('\0') ||
      path.isAbsolute(linkpath) ||
      /^[A-Za-z]:|^[\\/]/.test(linkpath)
    ) {
      throw archiveError(`symlink ${JSON.stringify(name.slice(0, 200))} points to an absolute path`);
    }
    const resolved = path.resolve(at.realParent, linkpath);
    if (!inside(this.root, resolved))
      throw archiveError(`symlink ${JSON.stringify(name.slice(0, 200))} points outside the target`);
    try {
      fs.symlinkSync(linkpath, at.full);
    } catch (err) {
      if (err.code === 'EEXIST') throw archiveError(`entry ${JSON.stringify(name.slice(0, 200))} appears twice`);
      throw err;
    }
  }

  /** A hardlink: a copy of a file this archive already wrote. */
  hardlink(name, linkpath) {
    const target = safeSegments(String(linkpath ?? '')).join('/');
    if (!this.files.has(target))
      throw archiveError(
        `hardlink ${JSON.stringify(name.slice(0, 200))} points to ${JSON.stringify(String(linkpath).slice(0, 200))}, not a file of this archive`,
      );
    const source = path.join(this.root, ...target.split('/'));
    const size = fs.statSync(source).size;
    const out = this.file(name, fs.statSync(source).mode);
    out.close();
    this.addBytes(size);
    // file() threw had `name` been the root itself.
    fs.copyFileSync(source, /** @type {{ full: string }} */ (this.place(name)).full);
  }

  /** After unpacking: every symlink in the tree resolves inside. */
  verifyLinks(dir = this.root, depth = 0) {
    if (depth > 64) throw archiveError('the archive nests directories deeper than 64');
    for (const d of fs.readdirSync(dir, { withFileTypes: true })) {
      const p = path.join(dir, d.name);
      if (d.isSymbolicLink()) {
        let real;
        try {
          real = fs.realpathSync.native(p);
        } catch {
          throw archiveError(`symlink ${JSON.stringify(path.relative(this.root, p))} is dangling or loops`);
        }
        if (!inside(this.root, real))
          throw archiveError(`symlink ${JSON.stringify(path.relative(this.root, p))} resolves outside the target`);
      } else if (d.isDirectory()) {
        this.verifyLinks(p, depth + 1);
      }
    }
  }
}

/** Decompressed bytes of `file` as an async iterable, capped. */
function decompressed(file, kind, target) {
  const source = fs.createReadStream(file);
  /** @type {import('node:stream').Readable} */
  let out = source;
  if (kind === 'tar.gz') out = stream.pipeline(source, zlib.createGunzip(), () => {});
  // unbzip2-stream is an old-style stream: a PassThrough makes it iterable.
  else if (kind === 'tar.bz2')
    out = stream.pipeline(source, require('unbzip2-stream')(), new stream.PassThrough(), () => {});
  const cap = target.limits.maxTotalBytes + 64 * 1024 * 1024; // headers and padding on top of the file bytes
  let seen = 0;
  return {
    async *[Symbol.asyncIterator]() {
      try {
        for await (const chunk of out) {
          seen += chunk.length;
          if (seen > cap) throw archiveError(`the archive decompresses to more than ${cap} bytes`);
          yield chunk;
        }
      } finally {
        out.destroy?.();
        // Closed before the caller removes the file: Windows keeps a file that is still open.
        if (!source.closed) {
          const closed = new Promise((resolve) => source.once('close', () => resolve(undefined)));
          source.destroy();
          await closed;
        }
      }
    },
  };
}

async function extractTar(file, kind, target) {
  const { Parser } = require('tar');
  let failure = null;
  const fail = (err) => {
    failure ??= err instanceof AcpError ? err : archiveError(`cannot unpack: ${err.message}`);
  };
  const parser = new Parser({ strict: true, onwarn: (_code, message) => fail(archiveError(`bad tar: ${message}`)) });
  const done = new Promise((resolve) => parser.on('end', resolve));
  parser.on('error', fail);
  parser.on('entry', (entry) => {
    if (failure) return entry.resume();
    try {
      switch (entry.type) {
        case 'File':
        case 'OldFile':
        case 'ContiguousFile': {
          const out = target.file(entry.path, entry.mode ?? 0o644);
          entry.on('data', (buf) => {
            if (failure) return;
            try {
              out.write(buf);
            } catch (err) {
              fail(err);
            }
          });
          entry.on('end', () => out.close());
          return;
        }
        case 'Directory':
          target.dir(entry.path);
          break;
        case 'SymbolicLink':
          target.symlink(entry.path, entry.linkpath);
          break;
        case 'Link':
          target.hardlink(entry.path, entry.linkpath);
          break;
        default:
          throw archiveError(
            `entry ${JSON.stringify(String(entry.path).slice(0, 200))} is a ${entry.type}: only files, directories and links are unpacked`,
          );
      }
    } catch (err) {
      fail(err);
    }
    entry.resume();
  });
  for await (const chunk of decompressed(file, kind, target)) {
    parser.write(chunk);
    if (failure) throw failure;
  }
  parser.end();
  await done;
  if (failure) throw failure;
}

const S_IFMT = 0o170000;
const S_IFREG = 0o100000;
const S_IFDIR = 0o040000;
const S_IFLNK = 0o120000;

function extractZip(file, target) {
  const yauzl = require('yauzl');
  return new Promise((resolve, reject) => {
    // decodeStrings: false: names are checked here, by this file's rules.
    yauzl.open(
      file,
      { lazyEntries: true, decodeStrings: false, validateEntrySizes: true, autoClose: true },
      (err, zip) => {
        if (err) return reject(archiveError(`not a zip archive: ${err.message}`));
        // The archive's descriptor is closed before the promise settles: the
        // caller removes the file next, which Windows refuses while it is open.
        let closed = false;
        const onClosed = [];
        zip.on('close', () => {
          closed = true;
          for (const f of onClosed.splice(0)) f();
        });
        const afterClose = (f) => {
          if (closed) f();
          else onClosed.push(f);
          zip.close();
        };
        if (zip.entryCount > target.limits.maxEntries) {
          return afterClose(() =>
            reject(archiveError(`the archive has more than ${target.limits.maxEntries} entries`)),
          );
        }
        let failed = false;
        const failWith = (e) => {
          if (failed) return;
          failed = true;
          afterClose(() => reject(e instanceof AcpError ? e : archiveError(`cannot unpack: ${e.message}`)));
        };
        zip.on('error', failWith);
        zip.on('end', () => afterClose(resolve));
        zip.on('entry', (entry) => {
          try {
            const name = entry.fileName.toString(entry.generalPurposeBitFlag & 0x800 ? 'utf8' : 'latin1');
            const unix = entry.versionMadeBy >> 8 === 3 ? (entry.externalFileAttributes >>> 16) & 0xffff : 0;
            const type = unix & S_IFMT;
            if (type !== 0 && type !== S_IFREG && type !== S_IFDIR && type !== S_IFLNK) {
              throw archiveError(`entry ${JSON.stringify(name.slice(0, 200))} is a device, FIFO or socket`);
            }
            if (type === S_IFDIR || (type === 0 && /[\\/]$/.test(name))) {
              target.dir(name);
              return zip.readEntry();
            }
            if (entry.uncompressedSize + target.bytes > target.limits.maxTotalBytes) {
              throw archiveError(`the archive unpacks to more than ${target.limits.maxTotalBytes} bytes`);
            }
            zip.openReadStream(entry, (e, rs) => {
              if (e) return failWith(e);
              if (type === S_IFLNK) {
                const parts = [];
                let n = 0;
                rs.on('data', (b) => {
                  n += b.length;
                  if (n > 4096)
                    rs.destroy(archiveError(`symlink ${JSON.stringify(name.slice(0, 200))} has an overlong target`));
                  else parts.push(b);
                });
                rs.on('error', failWith);
                rs.on('end', () => {
                  try {
                    target.symlink(name, Buffer.concat(parts).toString('utf8'));
                    zip.readEntry();
                  } catch (x) {
                    failWith(x);
                  }
                });
                return;
              }
              let out;
              try {
                out = target.file(name, unix || 0o644);
              } catch (x) {
                rs.destroy();
                return failWith(x);
              }
              rs.on('data', (b) => {
                try {
                  out.write(b);
                } catch (x) {
                  rs.destroy(x);
                }
              });
              rs.on('error', (x) => {
                out.close();
                failWith(x);
              });
              rs.on('end', () => {
                out.close();
                zip.readEntry();
              });
            });
          } catch (x) {
            failWith(x);
          }
        });
        zip.readEntry();
      },
    );
  });
}

/**
 * Unpack `file` (a `kind` from archiveKind) into the empty directory `dir`.
 * A raw binary is copied to `rawName` with the execute bit.
 *
 * @param {string} file
 * @param {string} kind
 * @param {string} dir
 * @param {{ limits?: { maxEntries?: number, maxTotalBytes?: number }, rawName?: string }} [options]
 */
async function extractArchive(file, kind, dir, { limits, rawName } = {}) {
  const target = new Target(dir, limits);
  try {
    if (kind === 'raw') {
      const out = target.file(rawName, 0o755);
      out.close();
      target.addBytes(fs.statSync(file).size);
      // target.file() threw had `rawName` been the root itself.
      const { full } = /** @type {{ full: string }} */ (target.place(rawName));
      fs.copyFileSync(file, full);
      fs.chmodSync(full, 0o755);
      return { entries: 1, bytes: target.bytes };
    }
    if (kind === 'zip') await extractZip(file, target);
    else if (kind === 'tar' || kind === 'tar.gz' || kind === 'tar.bz2') await extractTar(file, kind, target);
    else throw archiveError(`unknown archive kind ${kind}`);
    target.verifyLinks();
    return { entries: target.entries, bytes: target.bytes };
  } finally {
    target.closeAll();
  }
}

module.exports = { extractArchive, archiveKind, safeSegments, DEFAULT_LIMITS };
