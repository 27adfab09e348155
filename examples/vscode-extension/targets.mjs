// VS Code platform targets → acp-native binaries, and what a binary really is
// (read from its header), so a VSIX never ships another platform's binary.

/** `vsce package --target` name → acp-native platform (npm package suffix). */
export const TARGETS = {
  'linux-x64': 'linux-x64-gnu',
  'linux-arm64': 'linux-arm64-gnu',
  'alpine-x64': 'linux-x64-musl',
  'alpine-arm64': 'linux-arm64-musl',
  'darwin-x64': 'darwin-x64',
  'darwin-arm64': 'darwin-arm64',
  'win32-x64': 'win32-x64-msvc',
  'win32-arm64': 'win32-arm64-msvc',
};

/** The VS Code target of this machine (for tests), or undefined. */
export function hostTarget(platform) {
  return Object.keys(TARGETS).find((t) => TARGETS[t] === platform);
}

const ELF_MACHINES = { 0x3e: 'x64', 0xb7: 'arm64' };
const MACHO_CPUS = { 0x01000007: 'x64', 0x0100000c: 'arm64' };
const PE_MACHINES = { 0x8664: 'x64', 0xaa64: 'arm64' };

/** The platform a native binary was built for, e.g. `linux-x64-gnu`, from its header. */
export function binaryPlatform(buf) {
  if (buf.length >= 20 && buf.readUInt32BE(0) === 0x7f454c46) {
    const arch = ELF_MACHINES[buf.readUInt16LE(18)] ?? `elf-machine-${buf.readUInt16LE(18)}`;
    // Linked against glibc, a shared object carries versioned symbols
    // (memcpy@GLIBC_2.14, …); musl has no symbol versions. (Its libc may be
    // named libc.so or libc.musl-*.so.1, depending on the toolchain.)
    const libc = buf.includes('GLIBC_') ? 'gnu' : 'musl';
    return `linux-${arch}-${libc}`;
  }
  if (buf.length >= 8 && buf.readUInt32LE(0) === 0xfeedfacf) {
    return `darwin-${MACHO_CPUS[buf.readUInt32LE(4)] ?? `macho-cpu-${buf.readUInt32LE(4)}`}`;
  }
  if (buf.length >= 64 && buf.toString('latin1', 0, 2) === 'MZ') {
    const pe = buf.readUInt32LE(0x3c);
    if (pe + 6 <= buf.length && buf.toString('latin1', pe, pe + 4) === 'PE\0\0') {
      return `win32-${PE_MACHINES[buf.readUInt16LE(pe + 4)] ?? `pe-machine-${buf.readUInt16LE(pe + 4)}`}-msvc`;
    }
  }
  return 'not-a-native-binary';
}
