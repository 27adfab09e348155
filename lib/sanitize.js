'use strict';

// Agent text is untrusted: shown to a person, it must stay text. These
// helpers make a string safe to print to a terminal or to put into
// Markdown or HTML. The CLI prints every agent-controlled string through
// them; hosts that render agent text can use the same ones.

/**
 * Code points that steer a terminal or reorder what it shows: C0 controls
 * and DEL (ESC starts CSI/OSC/DCS/APC/PM/SOS sequences, CR and BS overdraw),
 * C1 controls (U+009B is CSI, U+009D OSC, … on terminals that take them),
 * bidi embeddings/overrides/isolates and marks, the line and paragraph
 * separators. Tab and newline are handled by the caller's choice.
 */
const unsafe = (c0) =>
  new RegExp(
    `[${c0}\\u007f-\\u009f\\u061c\\u200e\\u200f\\u2028\\u2029\\u202a-\\u202e\\u2066-\\u2069]|[\\ud800-\\udbff](?![\\udc00-\\udfff])|(?<![\\ud800-\\udbff])[\\udc00-\\udfff]`,
    'g',
  );
const UNSAFE = unsafe('\\u0000-\\u0008\\u000b-\\u001f');
// The same set, also matching tab and newline (single-line output).
const UNSAFE_SINGLE_LINE = unsafe('\\u0000-\\u001f');

const NAMED = { '\t': '\\t', '\n': '\\n', '\r': '\\r', '\x1b': '\\e' };

/** The visible stand-in of one unsafe code unit: `\e`, `\r`, `\x07`, `\u202e`. */
function visible(ch) {
  if (NAMED[ch]) return NAMED[ch];
  const code = ch.charCodeAt(0);
  return code < 0x100 ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u${code.toString(16).padStart(4, '0')}`;
}

/**
 * `text` with every terminal control shown as visible text (`\e[2J`,
 * `\e]52;c;…\x07`, `\u202e`) instead of being interpreted: nothing in the
 * result moves the cursor, clears, sets the title or clipboard, makes a
 * link or reorders characters. Newlines (and tabs) stay as they are unless
 * `singleLine` is set; a CR LF pair becomes a newline. Lone surrogates are
 * shown as `\udXXX`. Idempotent: the result contains no control characters.
 *
 * @param {unknown} text any value; non-strings are converted with String()
 * @param {{ singleLine?: boolean }} [options]
 */
function sanitizeForTerminal(text, { singleLine = false } = {}) {
  let s = typeof text === 'string' ? text : String(text);
  if (!singleLine) s = s.replace(/\r\n/g, '\n');
  return s.replace(singleLine ? UNSAFE_SINGLE_LINE : UNSAFE, visible);
}

/**
 * `text` escaped for HTML text and attribute values (`&<>"'`), controls
 * shown as by sanitizeForTerminal (newlines kept).
 */
function escapeHtml(text) {
  return sanitizeForTerminal(text).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

// Every ASCII punctuation character CommonMark/GFM gives a meaning (all of
// them may be backslash-escaped), and `:`/`@` so that no autolink forms.
const MARKDOWN_SPECIAL = /[\\`*_{}[\]()#+\-!|<>~=&:@$^]/g;

/**
 * `text` as Markdown that renders as exactly that text: no heading, list,
 * quote, fence, code, emphasis, table, link, image, autolink, entity or raw
 * HTML can form from it (CommonMark and GFM). Controls are shown as by
 * sanitizeForTerminal. Newlines stay (paragraph breaks are the author's)
 * unless `singleLine`, which turns each line break into a space (for a
 * heading, list item or table cell).
 *
 * @param {unknown} text
 * @param {{ singleLine?: boolean }} [options]
 */
function escapeMarkdown(text, { singleLine = false } = {}) {
  let s = typeof text === 'string' ? text : String(text);
  s = s.replace(/\r\n?/g, '\n');
  if (singleLine) s = s.replace(/\n+/g, ' ');
  s = sanitizeForTerminal(s).replace(MARKDOWN_SPECIAL, '\\$&');
  // An ordered list marker (`1.`), and a `www.` autolink (GFM).
  s = s.replace(/^( *[0-9]+)\./gm, '$1\\.').replace(/(www)\./gi, '$1\\.');
  // Leading blanks would make an indented code block: written as character references, they do not.
  return s.replace(/^[ \t]+/gm, (sp) => sp.replace(/[ \t]/g, (c) => (c === ' ' ? '&#32;' : '&#9;')));
}

module.exports = { sanitizeForTerminal, escapeMarkdown, escapeHtml };
