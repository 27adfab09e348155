// Electron: an app packs node_modules into app.asar and, with asarUnpack,
// the native binaries into app.asar.unpacked next to it. Electron cannot run
// here, so its view of the archive is recreated: the archive's contents at
// `…/app.asar/` (what Electron's fs shows JS code) with every `.node` removed
// (a binary cannot be loaded from inside the archive), and the unpacked tree
// that @electron/asar wrote at `…/app.asar.unpacked/`. The loader must map
// its asar path to the unpacked sibling.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { once } from 'node:events';
import { createRequire } from 'node:module';
import { Writable } from 'node:stream';
import { MOCK_AGENT } from './helpers.mjs';
import { copyPackage, ROOT, runIn, SESSION } from './package-copy.mjs';

const require = createRequire(import.meta.url);
const asar = require('@electron/asar');
const { currentPlatform, unpackedPath } = require('../lib/loader.js');
const PLATFORM = currentPlatform();
const BINARY = `acp-native.${PLATFORM}.node`;
const VERSION = require('../package.json').version;

/** An app as npm installs it: acp-native plus its platform package. */
function appSource(dir) {
  const src = join(dir, 'src');
  copyPackage(join(src, 'node_modules', 'acp-native'));
  const platformDir = join(src, 'node_modules', `acp-native-${PLATFORM}`);
  mkdirSync(platformDir, { recursive: true });
  writeFileSync(
    join(platformDir, 'package.json'),
    JSON.stringify({ name: `acp-native-${PLATFORM}`, version: VERSION, main: BINARY }),
  );
  copyFileSync(join(ROOT, BINARY), join(platformDir, BINARY));
  writeFileSync(join(src, 'package.json'), JSON.stringify({ name: 'app', version: '1.0.0', main: 'main.js' }));
  return src;
}

/** Pack `src` into resources/app.asar, then lay out Electron's view of it under view/. */
async function electronView(dir, src, options) {
  const archive = join(dir, 'resources', 'app.asar');
  // The promise settles once the files are written, before the archive is
  // closed (@electron/asar returns the still open write stream): wait for
  // the close, or on Windows the open archive keeps resources/ from being
  // removed (ENOTEMPTY), as a sync rmSync never lets the stream close.
  const out = await asar.createPackageWithOptions(src, archive, options);
  if (out instanceof Writable && !out.closed) await once(out, 'close');
  const view = join(dir, 'view');
  asar.extractAll(archive, join(view, 'app.asar'));
  const removeBinaries = (d) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      if (e.isDirectory()) removeBinaries(join(d, e.name));
      else if (e.name.endsWith('.node')) rmSync(join(d, e.name));
    }
  };
  removeBinaries(join(view, 'app.asar'));
  if (existsSync(`${archive}.unpacked`))
    cpSync(`${archive}.unpacked`, join(view, 'app.asar.unpacked'), { recursive: true });
  return { archive, app: join(view, 'app.asar') };
}

function session(app, binary = '') {
  return runIn(process.cwd(), SESSION, [join(app, 'node_modules', 'acp-native'), binary, MOCK_AGENT]);
}

function tempDir(t) {
  const dir = mkdtempSync(join(tmpdir(), 'acp-native-asar-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

test('asar paths map to their .unpacked sibling', () => {
  assert.equal(
    unpackedPath('/opt/App/resources/app.asar/node_modules/x/a.node'),
    '/opt/App/resources/app.asar.unpacked/node_modules/x/a.node',
  );
  assert.equal(
    unpackedPath('C:\\App\\resources\\app.asar\\node_modules\\a.node'),
    'C:\\App\\resources\\app.asar.unpacked\\node_modules\\a.node',
  );
  assert.equal(unpackedPath('/home/u/app/node_modules/x/a.node'), null);
  assert.equal(unpackedPath('/home/u/my.asar.d/a.node'), null, 'only a path segment ending in .asar');
});

test('packed with asarUnpack (*.node): the loader finds the binary in app.asar.unpacked', async (t) => {
  const dir = tempDir(t);
  const { archive, app } = await electronView(dir, appSource(dir), { unpack: '*.node' });
  // @electron/asar marked the binary unpacked and wrote it next to the archive.
  const inArchive = join('node_modules', `acp-native-${PLATFORM}`, BINARY);
  assert.equal(asar.statFile(archive, inArchive).unpacked, true);
  assert.ok(existsSync(join(`${archive}.unpacked`, inArchive)));
  const expected = join(dir, 'view', 'app.asar.unpacked', inArchive);
  assert.deepEqual(session(app), { stopReason: 'end_turn', loaded: expected });
  // An explicit path as the app computes it (inside app.asar) maps the same way.
  assert.deepEqual(session(app, join(app, inArchive)), { stopReason: 'end_turn', loaded: expected });
});

test('packed without unpacking: the error names both places and asarUnpack', async (t) => {
  const dir = tempDir(t);
  const { app } = await electronView(dir, appSource(dir), {});
  const seen = session(app);
  assert.equal(seen.code, 'ERR_ACP_NATIVE_BINDING');
  const inApp = join(app, 'node_modules', `acp-native-${PLATFORM}`, BINARY);
  assert.ok(seen.message.includes(`${inApp} (or ${unpackedPath(inApp)}): not found`), seen.message);
  assert.match(seen.message, /asarUnpack/);
});
