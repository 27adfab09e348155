// The esbuild recipes of docs/bundling.md, outside VS Code: a CommonJS bundle with the
// binary copied next to it (found without any call), and an ESM bundle with
// the createRequire banner and loadNativeBinding. Each bundle runs from a
// directory that holds no acp-native but the bundle and the binary.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createRequire } from 'node:module';
import * as esbuild from 'esbuild';
import { MOCK_AGENT, esbuildMissing } from './helpers.mjs';
import { ROOT } from './package-copy.mjs';

const require = createRequire(import.meta.url);
const { currentPlatform } = require('../lib/loader.js');
const BINARY = `acp-native.${currentPlatform()}.node`;

const ESM_MAIN = `
import { fileURLToPath } from 'node:url';
import { AcpClient, loadNativeBinding } from 'acp-native';
loadNativeBinding(fileURLToPath(new URL('./${BINARY}', import.meta.url)));
const client = await AcpClient.connect({ command: process.execPath, args: [process.argv[2]] });
const { sessionId } = await client.newSession();
const { stopReason } = await client.prompt({ sessionId, prompt: 'say:bundled' });
await client.close();
console.log(JSON.stringify({ stopReason, loaded: loadNativeBinding() }));
`;

test('esbuild ESM bundle with the createRequire banner and loadNativeBinding', {
  skip: esbuildMissing(),
}, async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'acp-native-bundle-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(join(dir, 'main.mjs'), ESM_MAIN);
  const outfile = join(dir, 'dist', 'main.mjs');
  const result = await esbuild.build({
    entryPoints: [join(dir, 'main.mjs')],
    outfile,
    bundle: true,
    platform: 'node',
    format: 'esm',
    banner: { js: "import { createRequire } from 'node:module'; const require = createRequire(import.meta.url);" },
    alias: { 'acp-native': ROOT }, // this repository is the package
    logLevel: 'silent',
  });
  assert.deepEqual(
    result.warnings.map((w) => w.text),
    [],
  );
  copyFileSync(join(ROOT, BINARY), join(dir, 'dist', BINARY));
  const out = execFileSync(process.execPath, [outfile, MOCK_AGENT], { cwd: dir, encoding: 'utf8' });
  assert.deepEqual(JSON.parse(out.trim().split('\n').at(-1)), {
    stopReason: 'end_turn',
    loaded: join(dir, 'dist', BINARY),
  });
});

test('esbuild CommonJS bundle finds the binary copied next to it, no call needed', {
  skip: esbuildMissing(),
}, async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'acp-native-bundle-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  // CommonJS has no top-level await: the same script inside an async function.
  writeFileSync(
    join(dir, 'main.js'),
    `
const { AcpClient, AgentManager, loadNativeBinding } = require('acp-native');
(async () => {
  const client = await AcpClient.connect({ command: process.execPath, args: [process.argv[2]] });
  const { sessionId } = await client.newSession();
  const { stopReason } = await client.prompt({ sessionId, prompt: 'say:bundled' });
  await client.close();
  // The registry snapshot is inlined: an offline list works from the bundle alone.
  const agents = await new AgentManager({ storeDir: require('node:path').join(__dirname, 'store'), offline: true }).list();
  console.log(JSON.stringify({ stopReason, loaded: loadNativeBinding(), agents: agents.length }));
})();`,
  );
  const outfile = join(dir, 'dist', 'main.js');
  const result = await esbuild.build({
    entryPoints: [join(dir, 'main.js')],
    outfile,
    bundle: true,
    platform: 'node',
    format: 'cjs',
    alias: { 'acp-native': ROOT },
    logLevel: 'silent',
  });
  assert.deepEqual(
    result.warnings.map((w) => w.text),
    [],
  );
  copyFileSync(join(ROOT, BINARY), join(dir, 'dist', BINARY));
  const out = execFileSync(process.execPath, [outfile, MOCK_AGENT], { cwd: dir, encoding: 'utf8' });
  assert.deepEqual(JSON.parse(out.trim().split('\n').at(-1)), {
    stopReason: 'end_turn',
    loaded: join(dir, 'dist', BINARY),
    agents: 5,
  });
});
