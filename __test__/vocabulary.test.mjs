// The error codes and client events are defined once, in Rust
// (crates/acp-core/src/vocabulary.rs, handed over by the binding's
// `vocabulary()`). These tests hold everything else to that list: the
// types a host compiles against (index.d.ts), the reference page
// (docs/error-codes.md), and every place in the core, the binding, the
// facade and the CLI that spells a code or emits an event.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const require = createRequire(import.meta.url);
const ts = require('typescript');
const { native } = require('../lib/loader.js');

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const read = (file) => readFileSync(join(ROOT, file), 'utf8');
const { errorCodes, events, viewEvents } = JSON.parse(native.vocabulary());
const thrown = new Set(errorCodes.filter((c) => c.thrown).map((c) => c.code));
const statusOnly = new Set(errorCodes.filter((c) => !c.thrown).map((c) => c.code));
const allCodes = new Set(errorCodes.map((c) => c.code));
const eventNames = new Set(events.map((e) => e.name));
const viewEventNames = new Set(viewEvents.map((e) => e.name));

const sorted = (set) => [...set].sort();

/** The compiler's view of index.d.ts (and the types it imports), built once. */
let program;
/** A declaration file (index.d.ts by default) as the compiler sees it. */
function typings(name = 'index.d.ts') {
  const file = join(ROOT, name);
  program ??= ts.createProgram([join(ROOT, 'index.d.ts')], {
    strict: true,
    noEmit: true,
    skipLibCheck: true,
    types: ['node'],
  });
  const checker = program.getTypeChecker();
  const source = program.getSourceFile(file);
  const find = (name) => source.statements.find((s) => s.name?.text === name);
  /** The string literals of a type alias's (union) type. */
  const literals = (name) => {
    const alias = find(name);
    assert.ok(alias, `${file} declares ${name}`);
    const type = checker.getTypeAtLocation(alias.name);
    const parts = type.isUnion() ? type.types : [type];
    return new Set(parts.map((t) => (t.isStringLiteral() ? t.value : checker.typeToString(t))));
  };
  const members = (name) => {
    const decl = find(name);
    assert.ok(decl, `${file} declares ${name}`);
    return new Set(decl.members.map((m) => m.name.text));
  };
  return { literals, members };
}

/** The codes in a table of docs/error-codes.md under the heading `section`. */
function documentedCodes(section) {
  const codes = new Set();
  let inSection = false;
  for (const line of read('docs/error-codes.md').split('\n')) {
    if (/^#{1,6} /.test(line)) inSection = line.replace(/^#+ /, '') === section;
    const first = line.match(/^\| `(ERR_ACP_[A-Z_]+)` \|/);
    if (inSection && first) codes.add(first[1]);
  }
  return codes;
}

/** Files under `dir` (relative to the root) whose names end in one of `exts`. */
function sources(dir, exts, skip = []) {
  const out = [];
  const walk = (at) => {
    for (const entry of readdirSync(join(ROOT, at), { withFileTypes: true })) {
      const path = join(at, entry.name);
      if (skip.some((s) => path.startsWith(s))) continue;
      if (entry.isDirectory()) walk(path);
      else if (exts.some((e) => entry.name.endsWith(e))) out.push(path);
    }
  };
  walk(dir);
  return out;
}

test('the vocabulary comes from the binding: codes and events, each with a meaning', () => {
  assert.ok(thrown.size >= 20 && statusOnly.size >= 1 && eventNames.size >= 10);
  assert.ok(viewEventNames.size >= 2);
  for (const word of [...errorCodes, ...events, ...viewEvents]) assert.match(word.meaning, /^\S.*\S$/);
});

test("index.d.ts's AcpErrorCode is exactly the codes the core lists as thrown", () => {
  const t = typings();
  assert.deepEqual(sorted(t.literals('AcpErrorCode')), sorted(thrown));
  assert.deepEqual(sorted(t.literals('AcpStatusOnlyErrorCode')), sorted(statusOnly));
});

test('docs/error-codes.md lists exactly the codes the core lists', () => {
  assert.deepEqual(sorted(documentedCodes('`AcpError` codes')), sorted(thrown));
  assert.deepEqual(sorted(documentedCodes('Codes only in `status().lastError`')), sorted(statusOnly));
});

test('every ERR_ACP_ code the core, the binding, the facade or the CLI spells is in the vocabulary', () => {
  const files = [
    ...sources('crates/acp-core/src', ['.rs']),
    ...sources('src', ['.rs']),
    ...sources('lib', ['.js'], ['lib/vendor']),
    ...sources('cli', ['.mjs', '.js']),
    'index.js',
    'index.mjs',
  ];
  const unknown = [];
  for (const file of files) {
    for (const m of read(file).matchAll(/ERR_ACP_[A-Z][A-Z_]*[A-Z]/g)) {
      if (!allCodes.has(m[0])) unknown.push(`${relative(ROOT, join(ROOT, file))}: ${m[0]}`);
    }
  }
  assert.ok(files.length > 50, `scanned ${files.length} files`);
  assert.deepEqual(unknown, []);
});

test("index.d.ts's AcpClientEvents is exactly the core's client events", () => {
  assert.deepEqual(sorted(typings().members('AcpClientEvents')), sorted(eventNames));
});

test('every event the core or the facade emits is in the vocabulary, and each is emitted', () => {
  // The core's host events (`Event::Host { name: "…" }`) and the facade's
  // own `emit('…')` calls on the client (its isolated `emit` included).
  const core = sources('crates/acp-core/src/connection', ['.rs']).flatMap((file) =>
    [...read(file).matchAll(/\bname: "([a-zA-Z]+)"/g)].map((m) => m[1]),
  );
  const facade = ['lib/connection.js', 'lib/client.js'].flatMap((file) =>
    [...read(file).matchAll(/(?:#emit|\.emit|\bemit)\(\s*'([a-zA-Z]+)'/g)].map((m) => m[1]),
  );
  const emitted = new Set([...core, ...facade]);
  assert.deepEqual(
    [...emitted].filter((n) => !eventNames.has(n)),
    [],
    'emitted but not in the vocabulary',
  );
  assert.deepEqual(
    [...eventNames].filter((n) => !emitted.has(n)),
    [],
    'in the vocabulary but never emitted',
  );
});

test("types/session-view.d.ts's SessionViewEvents is exactly the core's view events, each emitted", () => {
  assert.deepEqual(sorted(typings('types/session-view.d.ts').members('SessionViewEvents')), sorted(viewEventNames));
  const emitted = new Set(
    [...read('lib/session-view.js').matchAll(/(?:emitIsolated\(this,|\.emit\()\s*'([a-zA-Z]+)'/g)].map((m) => m[1]),
  );
  assert.deepEqual(sorted(emitted), sorted(viewEventNames));
});
