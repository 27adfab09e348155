// examples/vscode-extension, end to end: bundle (esbuild, webpack), package
// a VSIX with vsce for this machine's target, unpack it, and run activate(),
// the command and deactivate() in a fresh Node with a stub `vscode` module.
// Also: a VSIX for another target is refused rather than shipped with this
// machine's binary.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import { ROOT } from './package-copy.mjs';
import { esbuildMissing } from './helpers.mjs';

const require = createRequire(import.meta.url);
const { currentPlatform } = require('../lib/loader.js');
const EXAMPLE = join(ROOT, 'examples', 'vscode-extension');
const { packageVsix } = await import(pathToFileURL(join(EXAMPLE, 'package-vsix.mjs')).href);
const { BuildError } = await import(pathToFileURL(join(EXAMPLE, 'build.mjs')).href);
const { hostTarget, TARGETS } = await import(pathToFileURL(join(EXAMPLE, 'targets.mjs')).href);
const { readZip } = await import(pathToFileURL(join(EXAMPLE, 'zip.mjs')).href);

const PLATFORM = currentPlatform();
const TARGET = hostTarget(PLATFORM);
const BINARY = `acp-native.${PLATFORM}.node`;

// The parts of the VS Code API the extension uses, recording what it did.
const STUB_VSCODE = `
const calls = { commands: new Map(), info: [], output: [] };
module.exports = {
  __calls: calls,
  commands: { registerCommand: (id, fn) => { calls.commands.set(id, fn); return { dispose() { calls.commands.delete(id); } }; } },
  window: {
    createOutputChannel: () => ({ append: (t) => calls.output.push(t), appendLine: (t) => calls.output.push(t + '\\n'), dispose() {} }),
    showInformationMessage: (text) => { calls.info.push(text); return Promise.resolve(undefined); },
  },
  workspace: {
    workspaceFolders: [{ uri: { fsPath: process.env.STUB_WORKSPACE } }],
    getConfiguration: () => ({ get: () => [] }),
  },
};`;

// Load the unpacked extension as VS Code would, run the command, deactivate.
const HOST = `
const { readFileSync, readdirSync } = require('node:fs');
const extensionPath = process.argv[2];
const vscode = require('vscode');
// The mock agents this extension started (their script lies in its dist/).
const agents = () => process.platform !== 'linux' ? null : readdirSync('/proc').filter((p) => /^\\d+$/.test(p)).filter((p) => {
  try {
    const stat = readFileSync('/proc/' + p + '/stat', 'utf8');
    if (/^[ZX]$/.test(stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3))) return false;
    return readFileSync('/proc/' + p + '/cmdline', 'utf8').includes(extensionPath + '/dist/mock-agent.mjs');
  } catch { return false; }
}).length;
(async () => {
  const ext = require(extensionPath + '/dist/extension.js');
  const context = { extensionPath, subscriptions: [] };
  ext.activate(context);
  const result = await vscode.__calls.commands.get('acpNativeExample.runTurn')();
  const during = agents();
  await ext.deactivate();
  for (const d of context.subscriptions) d.dispose();
  console.log(JSON.stringify({ result, during, after: agents(), info: vscode.__calls.info, output: vscode.__calls.output.join(''), commands: [...vscode.__calls.commands.keys()] }));
})().catch((err) => { console.log(JSON.stringify({ error: String(err.stack) })); });`;

function tempDir(t) {
  const dir = mkdtempSync(join(tmpdir(), 'acp-native-vsix-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** Unpack a VSIX into `dir` (as VS Code installs it: extension/ holds the files). */
function unpack(vsix, dir) {
  for (const [name, data] of readZip(vsix)) {
    mkdirSync(dirname(join(dir, name)), { recursive: true });
    writeFileSync(join(dir, name), data, { mode: name.endsWith('.node') ? 0o755 : 0o644 });
  }
  return join(dir, 'extension');
}

for (const bundler of ['esbuild', 'webpack']) {
  test(`${bundler}: the VSIX for ${TARGET} runs a turn in a stub extension host and stops its agent`, {
    skip: (!TARGET && `no VS Code target for ${PLATFORM}`) || (bundler === 'esbuild' && esbuildMissing()),
  }, async (t) => {
    const dir = tempDir(t);
    const { vsix, files, warnings } = await packageVsix({ target: TARGET, bundler, out: join(dir, 'x.vsix') });
    assert.deepEqual(warnings, [], `${bundler} builds without warnings`);
    // The bundle, the one binary, the mock agent, the manifest; no node_modules, no sources.
    assert.deepEqual(
      files.filter((f) => f.startsWith('extension/')).sort(),
      [
        'extension/readme.md',
        `extension/dist/${BINARY}`,
        'extension/dist/extension.js',
        'extension/dist/mock-agent.mjs',
        'extension/package.json',
      ].sort(),
    );
    const extensionPath = unpack(vsix, join(dir, 'installed'));
    // The stub sits where `require('vscode')` from the bundle finds it; no
    // acp-native anywhere but inside the bundle.
    mkdirSync(join(dir, 'node_modules', 'vscode'), { recursive: true });
    writeFileSync(join(dir, 'node_modules', 'vscode', 'index.js'), STUB_VSCODE);
    const workspace = join(dir, 'workspace');
    mkdirSync(workspace);
    const out = execFileSync(process.execPath, ['-e', HOST, '--', 'host', extensionPath], {
      cwd: dir,
      encoding: 'utf8',
      env: { ...process.env, STUB_WORKSPACE: workspace },
    });
    const seen = JSON.parse(out.trim().split('\n').at(-1));
    assert.equal(seen.error, undefined, seen.error);
    assert.deepEqual(seen.result, { stopReason: 'end_turn', reply: 'hello from the extension' });
    assert.deepEqual(seen.info, ['Agent: hello from the extension']);
    assert.match(seen.output, /\[end_turn\] hello from the extension\n/);
    if (seen.during === null) {
      t.diagnostic('no /proc: the agent process count is not checked on this OS');
    } else {
      assert.equal(seen.during, 1, 'one agent while the extension is active');
      assert.equal(seen.after, 0, 'no agent after deactivate()');
    }
    assert.deepEqual(seen.commands, [], 'the command is disposed with the extension');
  });
}

test("a VSIX for another target is refused, not shipped with this machine's binary", {
  skip: (!TARGET && `no VS Code target for ${PLATFORM}`) || esbuildMissing(),
}, async (t) => {
  const dir = tempDir(t);
  const other = Object.keys(TARGETS).find(
    (target) => TARGETS[target] !== PLATFORM && !TARGETS[target].startsWith(PLATFORM.split('-')[0]),
  );
  const out = join(dir, 'other.vsix');
  await assert.rejects(
    packageVsix({ target: other, binary: join(ROOT, BINARY), out }),
    (err) => err instanceof BuildError && err.message.includes(`is a ${PLATFORM} binary, not ${TARGETS[other]}`),
  );
  assert.equal(existsSync(out), false, 'no VSIX was written');
  // Without --binary: this machine has no other platform's package.
  await assert.rejects(
    packageVsix({ target: other, out }),
    (err) => err instanceof BuildError && err.message.includes(`no acp-native.${TARGETS[other]}.node for ${other}`),
  );
});

test('binary headers name their platform: ELF machine and libc, Mach-O CPU, PE machine', async () => {
  const { binaryPlatform } = await import(pathToFileURL(join(EXAMPLE, 'targets.mjs')).href);
  const elf = (machine, extra) => {
    const b = Buffer.alloc(64);
    b.writeUInt32BE(0x7f454c46, 0);
    b.writeUInt16LE(machine, 18);
    return Buffer.concat([b, Buffer.from(extra)]);
  };
  assert.equal(binaryPlatform(elf(0x3e, 'libc.so.6\0memcpy\0GLIBC_2.14\0')), 'linux-x64-gnu');
  assert.equal(binaryPlatform(elf(0xb7, 'libc.so.6\0GLIBC_2.17\0')), 'linux-arm64-gnu');
  assert.equal(binaryPlatform(elf(0x3e, 'libc.so\0memcpy\0')), 'linux-x64-musl');
  assert.equal(binaryPlatform(elf(0xb7, 'libc.musl-aarch64.so.1\0')), 'linux-arm64-musl');
  const macho = (cpu) => {
    const b = Buffer.alloc(32);
    b.writeUInt32LE(0xfeedfacf, 0);
    b.writeUInt32LE(cpu, 4);
    return b;
  };
  assert.equal(binaryPlatform(macho(0x01000007)), 'darwin-x64');
  assert.equal(binaryPlatform(macho(0x0100000c)), 'darwin-arm64');
  const pe = (machine) => {
    const b = Buffer.alloc(256);
    b.write('MZ', 0, 'latin1');
    b.writeUInt32LE(0x80, 0x3c);
    b.write('PE\0\0', 0x80, 'latin1');
    b.writeUInt16LE(machine, 0x84);
    return b;
  };
  assert.equal(binaryPlatform(pe(0x8664)), 'win32-x64-msvc');
  assert.equal(binaryPlatform(pe(0xaa64)), 'win32-arm64-msvc');
  assert.equal(binaryPlatform(Buffer.from('module.exports = "./x.node"')), 'not-a-native-binary');
  // The real thing: the binary this machine built.
  assert.equal(binaryPlatform(readFileSync(join(ROOT, BINARY))), PLATFORM);
});
