#!/usr/bin/env node
// Type-check the public typings: the type tests in __test__/types (with
// their `@ts-expect-error` lines) and every README code snippet, under
// TypeScript's node16, nodenext and bundler module settings. Run by
// `npm test`. A snippet whose fence says `js no-check` is skipped (e.g.
// one showing both require and import).
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const tsc = join(dirname(createRequire(import.meta.url).resolve('typescript/package.json')), 'bin', 'tsc');
const out = join(root, '__test__', 'types', '.readme');

// Names README snippets use as "your code": declared, not imported.
const PRELUDE = `import type * as acp from 'acp-native';
declare function askTheUser(toolCall: acp.ToolCallUpdate, options: acp.PermissionOption[]): Promise<{ optionId: string }>;
declare function prompt(question: string): Promise<string>;
declare function render(update: acp.SessionUpdate): void;
declare function editorBufferOrDisk(path: string, line?: number | null, limit?: number | null): Promise<acp.ReadTextFileResponse>;
declare const sessionId: string;
declare const client: import('acp-native').AcpClient;
declare const context: { subscriptions: { dispose(): unknown }[] };
export {};
`;

function snippets() {
  const text = readFileSync(join(root, 'README.md'), 'utf8');
  const found = [];
  const fence = /^```(js|ts|mjs)([^\n]*)\n([\s\S]*?)^```$/gm;
  for (let m; (m = fence.exec(text)); ) {
    if (m[2].includes('no-check')) continue;
    const line = text.slice(0, m.index).split('\n').length;
    found.push({ line, code: m[3] });
  }
  return found;
}

rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });
const files = [];
for (const { line, code } of snippets()) {
  // Snippets that define what the prelude declares keep their own.
  const own = (name) => new RegExp(`(const|let|function)\\s+\\{?[^=]*\\b${name}\\b`).test(code);
  const prelude = PRELUDE.split('\n')
    .filter((l) => !/^declare (function|const) (\w+)/.test(l) || !own(/^declare (?:function|const) (\w+)/.exec(l)[1]))
    .join('\n');
  const imports = /from 'acp-native'/.test(code) ? '' : "import { AcpClient, AcpError, RpcError } from 'acp-native';\n";
  const file = join(out, `README.line-${line}.mts`);
  writeFileSync(file, `${imports}${prelude}\n${code}`);
  files.push(file);
}

const common = ['--noEmit', '--strict', '--target', 'es2022', '--lib', 'es2022,esnext.disposable,dom', '--types', 'node', '--skipLibCheck', 'false'];
const runs = [
  { name: 'node16', flags: ['--module', 'node16', '--moduleResolution', 'node16'], cjs: true },
  { name: 'nodenext', flags: ['--module', 'nodenext', '--moduleResolution', 'nodenext'], cjs: true },
  { name: 'bundler', flags: ['--module', 'esnext', '--moduleResolution', 'bundler'], cjs: false },
];
let failed = false;
for (const run of runs) {
  const inputs = [join(root, '__test__/types/api.mts'), ...(run.cjs ? [join(root, '__test__/types/cjs.cts'), join(root, '__test__/types-check.ts')] : []), ...files];
  try {
    execFileSync(process.execPath, [tsc, ...common, ...run.flags, ...inputs], { cwd: root, stdio: 'pipe' });
    console.log(`types: ${run.name} ok (${inputs.length} files, ${files.length} README snippets)`);
  } catch (err) {
    failed = true;
    console.error(`types: ${run.name} FAILED\n${err.stdout}${err.stderr}`);
  }
}
rmSync(out, { recursive: true, force: true });
process.exit(failed ? 1 : 0);
