// The Markdown files users read (README.md and docs/*.md) and the code
// snippets in them, shared by check-types.mjs (type-checks the snippets) and
// check-docs.mjs (links, runs the snippets, reference pages vs the typings).
//
// A snippet is a fence whose info starts with js, mjs or ts. Words after it:
//   no-check  not type-checked (e.g. it shows both require and import);
//   no-run    not run: it needs a real agent, an editor or Electron.
// A snippet followed by the line "It prints:" and a plain fence must print
// exactly that fence's text.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = fileURLToPath(new URL('..', import.meta.url));

/** `README.md` and every `docs/*.md`, as paths relative to the root. */
export function docFiles() {
  const docs = readdirSync(join(ROOT, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .sort()
    .map((f) => `docs/${f}`);
  return ['README.md', ...docs];
}

/** The snippets of one file: `{ file, line, lang, flags, code, prints? }`. */
export function snippets(file) {
  const text = readFileSync(join(ROOT, file), 'utf8');
  const found = [];
  const fence = /^([ \t]*)```(js|mjs|ts)(?![\w-])([^\n]*)\n([\s\S]*?)^\1```[ \t]*$/gm;
  for (let m; (m = fence.exec(text)); ) {
    const indent = m[1];
    const code = m[4]
      .split('\n')
      .map((l) => (l.startsWith(indent) ? l.slice(indent.length) : l))
      .join('\n');
    const line = text.slice(0, m.index).split('\n').length;
    const after = /^\s*It prints:\n\n```\n([\s\S]*?)^```$/m.exec(text.slice(m.index + m[0].length));
    const prints = after && after.index === 0 ? after[1] : undefined;
    found.push({ file, line, lang: m[2], flags: m[3].trim().split(/\s+/).filter(Boolean), code, prints });
  }
  return found;
}

/** Whether a snippet defines `name` itself (a declaration or a destructuring). */
export function defines(code, name) {
  return new RegExp(`\\b(const|let|var|function)\\s+(\\{[^}=]*\\b${name}\\b[^}=]*\\}|${name}\\b)`).test(code);
}
