// A copy of the package as npm would install it (the files package.json
// lists, no binary), for tests that lay out installs and bundles.
import { execFileSync } from 'node:child_process';
import { cpSync, mkdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = fileURLToPath(new URL('..', import.meta.url));

/** Copy the package's listed files into `dest`; returns `dest`. */
export function copyPackage(dest) {
  const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'));
  for (const file of [...pkg.files, 'package.json']) {
    mkdirSync(dirname(join(dest, file)), { recursive: true });
    cpSync(join(ROOT, file), join(dest, file), { recursive: true });
  }
  return dest;
}

/** Run `script` (CommonJS; its arguments from process.argv[2]) in `dir`; its last stdout line as JSON. */
export function runIn(dir, script, args = []) {
  const out = execFileSync(process.execPath, ['-e', script, '--', 'eval', ...args], { cwd: dir, encoding: 'utf8' });
  return JSON.parse(out.trim().split('\n').at(-1));
}

/** A turn against the mock agent (argv: package, binary or "", agent), or the error the first client threw. */
export const SESSION = `
const acp = require(process.argv[2]);
(async () => {
  try {
    if (process.argv[3]) acp.loadNativeBinding(process.argv[3]);
    const client = await acp.AcpClient.connect({ command: process.execPath, args: [process.argv[4]] });
    const { sessionId } = await client.newSession();
    const { stopReason } = await client.prompt({ sessionId, prompt: 'say:hi' });
    await client.close();
    console.log(JSON.stringify({ stopReason, loaded: acp.loadNativeBinding() }));
  } catch (err) {
    console.log(JSON.stringify({ code: err.code, message: err.message, platform: err.platform, triple: err.triple, tried: err.tried?.map((t) => t.where) }));
  }
})();`;
