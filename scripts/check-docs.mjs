#!/usr/bin/env node
// Check the user docs (README.md, docs/*.md), run by `npm test`:
//
// 1. links: every relative link and #anchor resolves to a file and a
//    heading, and docs/README.md links every page of docs/;
// 2. snippets: every js/ts snippet not marked `no-run` runs, from the
//    repository root, against the mock agent (mock-agent/agent.mjs). A
//    snippet that uses `client` or `sessionId` without defining them gets a
//    connected client and a new session first, and the client is closed
//    after it; one followed by "It prints:" must print exactly that;
// 3. reference pages vs the typings (index.d.ts, types/session-view.d.ts)
//    and the core: options.md, events.md, api.md, error-codes.md list
//    exactly what exists; limits.md names only options that exist.
//
//   node scripts/check-docs.mjs [--no-run]
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join, posix, relative } from 'node:path';
import { defines, docFiles, ROOT, snippets } from './docs-snippets.mjs';

const require = createRequire(import.meta.url);
const ts = require('typescript');

// Pages other branches add (docs/README.md links to them); a link to one
// that is missing is reported, not failed, until it lands.
const PENDING = new Set();

const problems = [];
const fail = (where, message) => problems.push(`${where}: ${message}`);
const read = (file) => readFileSync(join(ROOT, file), 'utf8');

// ---- 1. links ---------------------------------------------------------

/** The text outside fenced code blocks and inline code, with line numbers kept. */
function prose(text) {
  return text
    .replace(/^([ \t]*)(```|~~~)[^\n]*\n[\s\S]*?^\1\2[ \t]*$/gm, (block) => block.replace(/[^\n]/g, ''))
    .replace(/(`+)[^`\n]*?\1/g, (code) => ' '.repeat(code.length));
}

/** GitHub's anchors for the headings of a Markdown text. */
function anchors(text) {
  const seen = new Map();
  const out = new Set();
  const plain = prose(text); // same lines as `text`, code blanked
  for (const m of plain.matchAll(/^#{1,6}[ \t]+(.+?)[ \t#]*$/gm)) {
    // Inline code was blanked by prose(): take the heading from the raw text.
    const line = text.split('\n')[plain.slice(0, m.index).split('\n').length - 1];
    const title = line.replace(/^#{1,6}[ \t]+/, '').replace(/[ \t#]*$/, '');
    const base = title
      .toLowerCase()
      .replace(/<[^>]+>/g, '')
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/\s/g, '-');
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n ? `${base}-${n}` : base);
  }
  return out;
}

let links = 0;
let pendingLinks = 0;
function checkLinks(file) {
  const text = read(file);
  const plain = prose(text);
  for (const m of plain.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) {
    const target = m[1];
    if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // https:, mailto:
    const where = `${file}:${plain.slice(0, m.index).split('\n').length}`;
    links++;
    const [path, anchor] = target.split('#');
    // Forward slashes on every OS, like the names docFiles() gives.
    const resolved = path
      ? posix.normalize(posix.join(posix.dirname(file), decodeURIComponent(path))).replace(/\/$/, '')
      : file;
    if (!existsSync(join(ROOT, resolved))) {
      if (PENDING.has(resolved)) pendingLinks++;
      else fail(where, `broken link ${target} (no ${resolved})`);
      continue;
    }
    if (anchor === undefined) continue;
    if (!resolved.endsWith('.md') || statSync(join(ROOT, resolved)).isDirectory()) {
      fail(where, `anchor #${anchor} on ${resolved}, which is not a Markdown file`);
      continue;
    }
    if (!anchors(read(resolved)).has(anchor)) fail(where, `no heading for #${anchor} in ${resolved}`);
  }
}

// ---- 2. snippets --------------------------------------------------------

const RUN_DIR = join(ROOT, '.cache', 'docs-snippets'); // inside the package: `import 'acp-native'` resolves to it
// The snippets' own temporary files (their tmpdir()), removed after the run.
const SNIPPET_TMP = join(tmpdir(), `acp-docs-${process.pid}`);

/** The module to run for a snippet. */
function runnable({ lang, code }) {
  let body = code;
  if (lang === 'ts') {
    body = ts.transpileModule(code, {
      compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 },
    }).outputText;
  }
  const head = [`import { AcpClient as __AcpClient } from 'acp-native';`];
  if (!/from 'acp-native'/.test(code)) head.push(`import { AcpClient, AcpError, RpcError } from 'acp-native';`);
  const tail = [];
  if (/\bclient\b/.test(code) && !defines(code, 'client')) {
    head.push(
      `const client = await __AcpClient.connect({ command: process.execPath, args: ['mock-agent/agent.mjs'] });`,
    );
    tail.push('await client.close();');
  }
  if (/\bsessionId\b/.test(code) && !defines(code, 'sessionId'))
    head.push('const { sessionId } = await client.newSession();');
  return `${head.join('\n')}\n${body}\n${tail.join('\n')}\n`;
}

function run(snippet, index) {
  const file = join(RUN_DIR, `${index}-${snippet.file.replace(/[/.]/g, '_')}-line-${snippet.line}.mjs`);
  writeFileSync(file, runnable(snippet));
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [file],
      { cwd: ROOT, timeout: 60_000, maxBuffer: 16 * 1024 * 1024, env: { ...process.env, TMPDIR: SNIPPET_TMP } },
      (err, stdout, stderr) => {
        if (err) {
          const why = err.killed ? 'timed out after 60 s' : `exit ${err.code}`;
          fail(
            `${snippet.file}:${snippet.line}`,
            `snippet failed (${why}; ${relative(ROOT, file)})\n${stdout}${stderr}`.trimEnd(),
          );
        } else if (snippet.prints !== undefined && stdout.trim() !== snippet.prints.trim()) {
          fail(
            `${snippet.file}:${snippet.line}`,
            `the snippet printed\n${stdout.trimEnd()}\nbut the page says it prints\n${snippet.prints.trimEnd()}`,
          );
        } else if (snippet.prints !== undefined) {
          printsChecked++;
        }
        resolve();
      },
    );
  });
}

async function runAll(list) {
  rmSync(RUN_DIR, { recursive: true, force: true });
  mkdirSync(RUN_DIR, { recursive: true });
  mkdirSync(SNIPPET_TMP, { recursive: true });
  const queue = list.map((s, i) => () => run(s, i));
  const workers = Array.from({ length: 2 }, async () => {
    while (queue.length) await queue.shift()();
  });
  await Promise.all(workers);
  rmSync(SNIPPET_TMP, { recursive: true, force: true });
  if (!problems.some((p) => p.includes('snippet failed'))) rmSync(RUN_DIR, { recursive: true, force: true });
}

// ---- 3. reference pages vs the typings -------------------------------

function declarations(file) {
  const source = ts.createSourceFile(file, read(file), ts.ScriptTarget.Latest, true);
  const found = new Map();
  const visit = (node) => {
    if ((ts.isInterfaceDeclaration(node) || ts.isClassDeclaration(node)) && node.name) found.set(node.name.text, node);
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

/** Member names of an interface or class (computed ones as written, e.g. `[Symbol.asyncDispose]`). */
function members(decls, name) {
  const node = decls.get(name);
  if (!node) throw new Error(`no declaration of ${name}`);
  return node.members
    .filter((m) => m.name && !ts.isConstructorDeclaration(m))
    .map((m) => (ts.isComputedPropertyName(m.name) ? m.name.getText() : m.name.text));
}

/**
 * Backticked names in one cell (the first by default) of every table row
 * of a page, or of the section under the heading `section` only.
 */
function tableNames(file, { column = 0, section } = {}) {
  const names = new Set();
  let inSection = section === undefined;
  const separator = /^\|[\s|:-]+\|$/;
  const lines = read(file).split('\n');
  for (const [i, line] of lines.entries()) {
    if (section !== undefined && /^#{1,6} /.test(line)) inSection = line.replace(/^#+ /, '') === section;
    // Not a row, a separator, or a header row (the one above a separator).
    if (!inSection || !/^\|/.test(line) || separator.test(line) || separator.test(lines[i + 1] ?? '')) continue;
    const cells = line.replace(/\\\|/g, '\0').split('|').slice(1, -1);
    for (const m of (cells[column] ?? '').matchAll(/`([^`]+)`/g)) names.add(m[1].replace(/\(.*$/, ''));
  }
  return names;
}

/** Every backticked name on a page, calls reduced to their name. */
function mentioned(file) {
  return new Set([...read(file).matchAll(/`([^`\n]+)`/g)].map((m) => m[1].replace(/\(.*$/, '')));
}

function compare(page, documented, expected, what) {
  const missing = [...expected].filter((n) => !documented.has(n));
  const extra = [...documented].filter((n) => !expected.has(n));
  if (missing.length) fail(page, `${what} not documented: ${missing.join(', ')}`);
  if (extra.length) fail(page, `documented ${what} that do not exist: ${extra.join(', ')}`);
}

let referenceChecks = 0;
let printsChecked = 0;
function checkReference() {
  const api = declarations('index.d.ts');
  const views = declarations('types/session-view.d.ts');

  const options = new Set([
    ...members(api, 'AcpClientOptions'),
    ...members(api, 'FsOptions').map((n) => `fs.${n}`),
    ...members(api, 'TerminalOptions').map((n) => `terminals.${n}`),
    ...members(views, 'SessionViewOptions'),
    ...members(views, 'SessionViewLimits'),
  ]);
  compare('docs/options.md', tableNames('docs/options.md'), options, 'options');
  // limits.md: every option its table names exists.
  const perCall = new Set([...members(api, 'CallOptions'), 'highWaterMark']);
  const limitOptions = [...tableNames('docs/limits.md', { column: 2 })].filter(
    (n) => !options.has(n) && !perCall.has(n),
  );
  if (limitOptions.length) fail('docs/limits.md', `names options that do not exist: ${limitOptions.join(', ')}`);

  const events = new Set([...members(api, 'AcpClientEvents'), ...members(views, 'SessionViewEvents')]);
  compare('docs/events.md', tableNames('docs/events.md'), events, 'events');

  // api.md: every member of AcpClient and SessionView is named somewhere, and the exports table is exact.
  const named = mentioned('docs/api.md');
  for (const [cls, decls] of [
    ['AcpClient', api],
    ['SessionView', views],
  ]) {
    const missing = members(decls, cls).filter((n) => !named.has(n) && !named.has(`${cls}.${n}`));
    if (missing.length) fail('docs/api.md', `${cls} members not documented: ${missing.join(', ')}`);
  }
  const exportsTable = tableNames('docs/api.md', { section: 'Exports' });
  const exported = new Set(Object.keys(require('../index.js')));
  const missingExports = [...exported].filter((n) => !exportsTable.has(n));
  if (missingExports.length) fail('docs/api.md', `exports not documented: ${missingExports.join(', ')}`);

  // error-codes.md: the built-ins' data.reason values (its codes are checked
  // against the core's list by __test__/vocabulary.test.mjs).
  const errorRs = readFileSync(join(ROOT, 'crates/acp-core/src/builtin/error.rs'), 'utf8');
  const reasons = new Set([...errorRs.matchAll(/(?:ErrorCode::\w+|RESOURCE_NOT_FOUND),\s*"(\w+)"/g)].map((m) => m[1]));
  reasons.delete('cancelled'); // the request was settled meanwhile: never sent
  reasons.add('tooManyPendingRequests'); // the pending-request budget (connection/reader.rs)
  if (reasons.size < 10)
    fail(
      'scripts/check-docs.mjs',
      `found only ${reasons.size} refusal reasons in builtin/error.rs: update the pattern`,
    );
  compare(
    'docs/error-codes.md',
    tableNames('docs/error-codes.md', { column: 1, section: 'Built-in refusals' }),
    reasons,
    'built-in refusal reasons',
  );
  referenceChecks = 5;
}

// ---- main -------------------------------------------------------------

const files = docFiles();
for (const file of files) checkLinks(file);
// The index links every page.
const indexed = new Set([...prose(read('docs/README.md')).matchAll(/\]\(([^)#\s]+)/g)].map((m) => `docs/${m[1]}`));
for (const file of files)
  if (file.startsWith('docs/') && file !== 'docs/README.md' && !indexed.has(file))
    fail('docs/README.md', `no link to ${file}`);
checkReference();
const all = files.flatMap((f) => snippets(f));
const toRun = all.filter((s) => !s.flags.includes('no-run'));
if (!process.argv.includes('--no-run')) await runAll(toRun);

if (problems.length) {
  for (const p of problems) console.error(`✖ ${p}`);
  console.error(`✖ docs: ${problems.length} problem(s)`);
  process.exit(1);
}
const ran = process.argv.includes('--no-run') ? 0 : toRun.length;
const pending = pendingLinks ? `, ${pendingLinks} to pages not merged yet (${[...PENDING].join(', ')})` : '';
console.log(
  `✔ docs: ${files.length} files, ${links} relative links ok${pending}; ${ran} snippets ran (${printsChecked} printing what the page shows), ${all.length - toRun.length} marked no-run; ${referenceChecks} reference pages match the typings`,
);
