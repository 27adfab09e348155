#!/usr/bin/env node
// Type-check the public typings: the type tests in __test__/types (with
// their `@ts-expect-error` lines) and every code snippet of README.md and
// docs/*.md, under TypeScript's node16, nodenext and bundler module
// settings. Run by `npm test`. A snippet whose fence says `no-check` is
// skipped (e.g. one showing both require and import). Then the JS itself:
// lib/ and index.js checked from their JSDoc (tsconfig.lib.json), and
// their exports against index.d.ts (__test__/types/lib-exports.ts).
import { execFileSync } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { defines, docFiles, snippets } from './docs-snippets.mjs';

const root = fileURLToPath(new URL('..', import.meta.url));
const tsc = join(dirname(createRequire(import.meta.url).resolve('typescript/package.json')), 'bin', 'tsc');
const out = join(root, '__test__', 'types', '.readme');

// Names snippets use as "your code": declared, not imported.
const PRELUDE = `import type * as acp from 'acp-native';
declare function askTheUser(toolCall: acp.ToolCallUpdate, options: acp.PermissionOption[]): Promise<{ optionId: string }>;
declare function prompt(question: string): Promise<string>;
declare function render(update: acp.SessionUpdate): void;
declare function editorBufferOrDisk(path: string, line?: number | null, limit?: number | null): Promise<acp.ReadTextFileResponse>;
declare const sessionId: string;
declare const savedSessionId: string;
declare const client: import('acp-native').AcpClient;
declare const context: { subscriptions: { dispose(): unknown }[] };
export {};
`;

rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });
const files = [];
const all = docFiles()
  .flatMap((file) => snippets(file))
  .filter((s) => !s.flags.includes('no-check'));
for (const { file, line, code } of all) {
  // Snippets that define what the prelude declares keep their own.
  const prelude = PRELUDE.split('\n')
    .filter(
      (l) =>
        !/^declare (function|const) (\w+)/.test(l) || !defines(code, /^declare (?:function|const) (\w+)/.exec(l)[1]),
    )
    .join('\n');
  const imports = /from 'acp-native'/.test(code) ? '' : "import { AcpClient, AcpError, RpcError } from 'acp-native';\n";
  const name = `${file.replace(/[/.]/g, '_')}.line-${line}.mts`;
  const path = join(out, name);
  writeFileSync(path, `${imports}${prelude}\n${code}`);
  files.push(path);
}

const common = [
  '--noEmit',
  '--strict',
  '--target',
  'es2022',
  '--lib',
  'es2022,esnext.disposable,dom',
  '--types',
  'node',
  '--skipLibCheck',
  'false',
];
const runs = [
  { name: 'node16', flags: ['--module', 'node16', '--moduleResolution', 'node16'], cjs: true },
  { name: 'nodenext', flags: ['--module', 'nodenext', '--moduleResolution', 'nodenext'], cjs: true },
  { name: 'bundler', flags: ['--module', 'esnext', '--moduleResolution', 'bundler'], cjs: false },
];
let failed = false;
const passed = [];
for (const run of runs) {
  const inputs = [
    join(root, '__test__/types/api.mts'),
    ...(run.cjs ? [join(root, '__test__/types/cjs.cts'), join(root, '__test__/types-check.ts')] : []),
    ...files,
  ];
  try {
    execFileSync(process.execPath, [tsc, ...common, ...run.flags, ...inputs], { cwd: root, stdio: 'pipe' });
    passed.push(run.name);
  } catch (err) {
    failed = true;
    console.error(`types: ${run.name} FAILED\n${err.stdout}${err.stderr}`);
  }
}
rmSync(out, { recursive: true, force: true });
try {
  execFileSync(process.execPath, [tsc, '-p', join(root, 'tsconfig.lib.json')], { cwd: root, stdio: 'pipe' });
  passed.push('lib/ (checkJs)');
} catch (err) {
  failed = true;
  console.error(`types: lib/ (checkJs) FAILED\n${err.stdout}${err.stderr}`);
}
if (!failed) console.log(`✔ types: ${files.length} doc snippets and the type tests, under ${passed.join(', ')}`);
process.exit(failed ? 1 : 0);
