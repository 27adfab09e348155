// The symbol versions an ELF shared object needs from its libraries, read
// from the version-needs section (SHT_GNU_verneed, `.gnu.version_r`) in
// plain JS: no readelf on the user's machine, any architecture, either byte
// order. Used by `acp-native doctor` and scripts/glibc-ceiling.mjs.
//
// The input may be any file (a corrupt download, a Mach-O): every offset
// is bounds-checked and every chain walk is bounded by the section size, so
// a bad file gives a typed error, never a hang or a huge allocation.

export const SHT_GNU_VERNEED = 0x6ffffffe;
const SHT_STRTAB = 3;
/** Size of one Elf_Verneed / Elf_Vernaux record (same for ELF32 and ELF64). */
const RECORD_SIZE = 16;

/** The file is not an ELF object we can read: `message` says why. */
export class ElfError extends Error {
  constructor(message) {
    super(message);
    this.name = 'ElfError';
  }
}

/** Bounds-checked little/big-endian reads over a Buffer. */
function reader(buf, littleEndian) {
  const check = (offset, size) => {
    if (!Number.isSafeInteger(offset) || offset < 0 || offset + size > buf.length) {
      throw new ElfError(
        `truncated or corrupt ELF: read of ${size} bytes at ${offset} past the end (${buf.length} bytes)`,
      );
    }
  };
  return {
    u16(offset) {
      check(offset, 2);
      return littleEndian ? buf.readUInt16LE(offset) : buf.readUInt16BE(offset);
    },
    u32(offset) {
      check(offset, 4);
      return littleEndian ? buf.readUInt32LE(offset) : buf.readUInt32BE(offset);
    },
    u64(offset) {
      check(offset, 8);
      const v = littleEndian ? buf.readBigUInt64LE(offset) : buf.readBigUInt64BE(offset);
      if (v > BigInt(Number.MAX_SAFE_INTEGER)) throw new ElfError(`corrupt ELF: offset ${v} out of range`);
      return Number(v);
    },
    /** A NUL-terminated string starting at `offset`, not past `end`. */
    cstring(offset, end) {
      check(offset, 1);
      const stop = buf.indexOf(0, offset);
      if (stop < 0 || stop >= Math.min(end, buf.length))
        throw new ElfError(`corrupt ELF: unterminated string at ${offset}`);
      return buf.toString('latin1', offset, stop);
    },
  };
}

/** The section headers (`{ type, offset, size, link }` each) and a bounds-checked reader. */
export function sectionHeaders(buf) {
  if (buf.length < 16 || buf.readUInt32BE(0) !== 0x7f454c46) throw new ElfError('not an ELF file (no \\x7fELF magic)');
  const elfClass = buf[4];
  const data = buf[5];
  if (elfClass !== 1 && elfClass !== 2) throw new ElfError(`corrupt ELF: unknown class ${elfClass}`);
  if (data !== 1 && data !== 2) throw new ElfError(`corrupt ELF: unknown byte order ${data}`);
  const is64 = elfClass === 2;
  const r = reader(buf, data === 1);
  const shoff = is64 ? r.u64(0x28) : r.u32(0x20);
  const shentsize = r.u16(is64 ? 0x3a : 0x2e);
  const shnum = r.u16(is64 ? 0x3c : 0x30);
  if (shoff === 0 || shnum === 0) throw new ElfError('ELF file has no section headers');
  if (shentsize < (is64 ? 0x40 : 0x28)) throw new ElfError(`corrupt ELF: section header size ${shentsize}`);
  const sections = [];
  for (let i = 0; i < shnum; i++) {
    const at = shoff + i * shentsize;
    sections.push(
      is64
        ? { type: r.u32(at + 4), offset: r.u64(at + 0x18), size: r.u64(at + 0x20), link: r.u32(at + 0x28) }
        : { type: r.u32(at + 4), offset: r.u32(at + 0x10), size: r.u32(at + 0x14), link: r.u32(at + 0x18) },
    );
  }
  return { sections, r };
}

/**
 * The versions the object needs, by library: `[{ file: 'libc.so.6',
 * versions: ['GLIBC_2.2.5', ...] }, ...]` in file order. An object without
 * a version-needs section (a static or musl build) gives `[]`.
 * @param {Buffer} buf the whole file
 * @throws {ElfError} when `buf` is not a readable ELF object
 */
export function versionNeeds(buf) {
  const { sections, r } = sectionHeaders(buf);
  const verneed = sections.find((s) => s.type === SHT_GNU_VERNEED);
  if (!verneed) return [];
  const strtab = sections[verneed.link];
  if (!strtab || strtab.type !== SHT_STRTAB) throw new ElfError('corrupt ELF: version needs point at no string table');
  const strEnd = strtab.offset + strtab.size;
  const name = (offset) => {
    if (offset >= strtab.size) throw new ElfError(`corrupt ELF: string offset ${offset} outside the string table`);
    return r.cstring(strtab.offset + offset, strEnd);
  };
  // Each record is at least RECORD_SIZE bytes, so a well-formed section
  // holds at most this many; more means the chain loops.
  let budget = Math.floor(verneed.size / RECORD_SIZE);
  const spend = () => {
    if (--budget < 0) throw new ElfError('corrupt ELF: version needs chain longer than its section');
  };
  const needs = [];
  let at = verneed.offset;
  for (;;) {
    spend();
    const count = r.u16(at + 2);
    const file = name(r.u32(at + 4));
    const versions = [];
    let aux = at + r.u32(at + 8);
    for (let i = 0; i < count; i++) {
      spend();
      versions.push(name(r.u32(aux + 8)));
      const nextAux = r.u32(aux + 12);
      if (nextAux === 0) break;
      aux += nextAux;
    }
    needs.push({ file, versions });
    const next = r.u32(at + 12);
    if (next === 0) break;
    at += next;
  }
  return needs;
}

/** `[major, minor, patch]` of a `GLIBC_x.y[.z]` name, or null for other names. */
export function parseGlibcVersion(name) {
  const m = /^GLIBC_(\d+)\.(\d+)(?:\.(\d+))?$/.exec(name);
  return m ? [Number(m[1]), Number(m[2]), Number(m[3] ?? 0)] : null;
}

/** The highest `[major, minor, patch]` among the GLIBC_* versions in `needs`, or null if none. */
export function highestGlibc(needs) {
  const versions = needs.flatMap((n) => n.versions.map(parseGlibcVersion)).filter(Boolean);
  versions.sort((a, b) => a[0] - b[0] || a[1] - b[1] || a[2] - b[2]);
  return versions.at(-1) ?? null;
}

export const glibcVersionName = ([major, minor, patch]) => `GLIBC_${major}.${minor}${patch ? `.${patch}` : ''}`;

/** Is `needed` (`[major, minor, patch]`) newer than `max` (`[major, minor]`)? */
export const newerThan = (needed, [major, minor]) => needed[0] > major || (needed[0] === major && needed[1] > minor);
