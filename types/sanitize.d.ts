// Agent text is untrusted: helpers that keep it text when a host shows it
// (lib/sanitize.js; see docs/security.md).

export interface SanitizeOptions {
  /** Also show newlines and tabs as `\n` / `\t` (for a name, title or status on one line). */
  singleLine?: boolean;
}

/**
 * `text` with every terminal control shown as visible text (`\e[2J`,
 * `\e]52;c;…\x07`, `\u202e`) instead of being interpreted: C0/C1 controls,
 * DEL, the ESC that starts CSI/OSC/DCS/APC/PM/SOS sequences, bidi
 * overrides and isolates, line separators, lone surrogates. Newlines and
 * tabs stay unless `singleLine`. Idempotent.
 */
export declare function sanitizeForTerminal(text: unknown, options?: SanitizeOptions): string;

/**
 * `text` as Markdown that renders as exactly that text: no heading, list,
 * quote, fence, code, emphasis, table, link, image, autolink, entity or
 * raw HTML forms from it (CommonMark, GFM). Controls shown as by
 * sanitizeForTerminal. `singleLine` turns line breaks into spaces.
 */
export declare function escapeMarkdown(text: unknown, options?: SanitizeOptions): string;

/** `text` escaped for HTML text and attribute values (`& < > " '`), controls shown as by sanitizeForTerminal. */
export declare function escapeHtml(text: unknown): string;
