// Turns ACP session updates into readable terminal output. Agent text and
// thoughts stream as they arrive; tool calls, plans and notes get a line of
// their own. Colours only on a TTY without NO_COLOR.
//
// Every string an agent controls goes through lib/sanitize.js before it is
// written: escape sequences, controls and bidi overrides are shown as
// text (`\e[2J`), never interpreted. Message text keeps its line breaks;
// names, titles, plan entries and statuses are one line each.
import { createRequire } from 'node:module';

const { sanitizeForTerminal } = createRequire(import.meta.url)('../lib/sanitize.js');

/** Agent text that may span lines, made inert. */
const text = (value) => sanitizeForTerminal(value ?? '');
/** An agent-given name, title or status: one inert line. */
const one = (value) => sanitizeForTerminal(value ?? '', { singleLine: true });

const STYLES = {
  dim: [2, 22],
  bold: [1, 22],
  italic: [3, 23],
  red: [31, 39],
  green: [32, 39],
  yellow: [33, 39],
  cyan: [36, 39],
};

const PLAN_MARK = { completed: '[x]', in_progress: '[>]', pending: '[ ]' };

/** First line of `text`, at most `max` characters. */
function summary(value, max = 160) {
  const line =
    String(value)
      .split('\n')
      .find((l) => l.trim() !== '') ?? '';
  return one(line.length > max ? `${line.slice(0, max - 1)}…` : line);
}

/** The text of a ContentBlock or tool call content item, if it has any. */
function contentText(item) {
  if (!item || typeof item !== 'object') return '';
  if (item.type === 'text') return item.text ?? '';
  if (item.type === 'content') return contentText(item.content);
  if (item.type === 'diff') return `diff ${item.path ?? ''}`;
  if (item.type === 'terminal') return `terminal ${item.terminalId ?? ''}`;
  if (item.type === 'resource_link') return item.uri ?? '';
  if (item.type === 'resource') return item.resource?.uri ?? '';
  return item.type ?? '';
}

/** `/name …` of available commands, or `none`. */
function commandNames(commands) {
  return (Array.isArray(commands) ? commands : []).map((c) => `/${one(c?.name)}`).join(' ') || 'none';
}

/** Tool calls whose title and state the renderer remembers, at most (the oldest are forgotten first). */
const MAX_REMEMBERED = 10_000;
/** Longest title remembered for later status lines (the first line shows it whole). */
const MAX_REMEMBERED_TITLE = 200;

/** Longest option name shown (a longer one is cut with `…`). */
const MAX_LABEL = 200;

/**
 * Characters that show as nothing (zero-width spaces and joiners, soft
 * hyphens, variation selectors, tags, fillers): two option names that
 * differ only by them would look the same.
 */
const INVISIBLE = /[\p{Default_Ignorable_Code_Point}\p{Cf}]/gu;

/** An option's name (or id) as one inert line, its invisible characters shown (`\u200b`), cut to fit. */
export function optionName(option) {
  const name = one(option?.name ?? option?.optionId).replace(INVISIBLE, (ch) => {
    const code = ch.codePointAt(0).toString(16);
    return code.length > 4 ? `\\u{${code}}` : `\\u${code.padStart(4, '0')}`;
  });
  return name.length > MAX_LABEL ? `${name.slice(0, MAX_LABEL - 1)}…` : name;
}

/**
 * What the permission prompt shows for each option: its kind, then its
 * name (the name is the agent's to choose: "Reject" may allow). The kind
 * comes first, where no name can put a forged one.
 */
export function optionLabels(options) {
  return options.map((option) =>
    typeof option?.kind === 'string' ? `[${one(option.kind)}] ${optionName(option)}` : optionName(option),
  );
}

export class Renderer {
  #out;
  #color;
  #stream = null; // 'agent' | 'thought' | 'user' while a chunk run is open
  #atLineStart = true;
  #toolTitles = new Map(); // toolCallId → title, for updates that omit it (see #rememberTitle)
  #beforeWrite;

  /**
   * `out` is a writable stream; `color` forces colours on or off;
   * `beforeWrite` runs before each write (the chat moves off an open prompt).
   */
  constructor(out, { color = out.isTTY === true && !process.env.NO_COLOR, beforeWrite } = {}) {
    this.#out = out;
    this.#color = color;
    this.#beforeWrite = beforeWrite;
  }

  #style(name, text) {
    if (!this.#color) return text;
    const [on, off] = STYLES[name];
    return `\x1b[${on}m${text}\x1b[${off}m`;
  }

  /** Remember a tool call's (inert) title, cut, within MAX_REMEMBERED calls: an agent sends as many as it likes. */
  #rememberTitle(id, title) {
    // Cut into a copy: a slice would keep the whole title alive.
    const kept =
      title.length > MAX_REMEMBERED_TITLE ? structuredClone(`${title.slice(0, MAX_REMEMBERED_TITLE - 1)}…`) : title;
    this.#toolTitles.set(id, kept);
    if (this.#toolTitles.size > MAX_REMEMBERED) this.#toolTitles.delete(this.#toolTitles.keys().next().value);
  }

  #write(text) {
    if (text === '') return;
    this.#beforeWrite?.();
    this.#out.write(text);
    this.#atLineStart = text.endsWith('\n');
  }

  /** End a streaming run so the next output starts on a fresh line. */
  #closeStream() {
    this.#stream = null;
    if (!this.#atLineStart) this.#write('\n');
  }

  /** A whole line of its own (closes any open stream first); `value` is written as is: sanitize what it quotes. */
  line(value) {
    this.#closeStream();
    this.#write(`${value}\n`);
  }

  /** A dim note; `value` may quote agent text (made inert here). */
  note(value) {
    this.line(this.#style('dim', text(value)));
  }

  /** An error line; `value` may quote agent text (made inert here). */
  error(value) {
    this.line(this.#style('red', text(value)));
  }

  #chunk(stream, value, label, style) {
    if (this.#stream !== stream) {
      this.#closeStream();
      this.#stream = stream;
      if (label) this.#write(this.#style('dim', label));
    }
    const safe = text(value);
    this.#write(style ? this.#style(style, safe) : safe);
  }

  /** One `session/update` (the `update` object). Unknown variants get a short note. */
  update(update) {
    switch (update?.sessionUpdate) {
      case 'agent_message_chunk':
        return this.#chunk('agent', contentText(update.content), '', null);
      case 'agent_thought_chunk':
        return this.#chunk('thought', contentText(update.content), 'thinking: ', 'dim');
      case 'user_message_chunk':
        return this.#chunk('user', contentText(update.content), 'you: ', 'cyan');
      case 'tool_call':
        return this.#toolCall(update);
      case 'tool_call_update':
        return this.#toolCallUpdate(update);
      case 'plan':
        return this.#plan(update.entries ?? []);
      case 'current_mode_update':
        return this.note(`(mode: ${one(update.currentModeId)})`);
      case 'available_commands_update':
        return this.note(`(commands: ${commandNames(update.availableCommands)})`);
      case 'session_info_update':
        return update.title ? this.note(`(session: ${one(update.title)})`) : undefined;
      default:
        return this.note(`(update: ${one(update?.sessionUpdate ?? 'unknown')})`);
    }
  }

  #toolCall(call) {
    const title = one(call.title ?? call.toolCallId);
    this.#rememberTitle(call.toolCallId, title);
    const kind = call.kind ? ` [${one(call.kind)}]` : '';
    this.line(
      `${this.#style('yellow', '▸ tool')} ${this.#style('bold', title)}${kind} ${this.#style('dim', one(call.status ?? 'pending'))}`,
    );
  }

  #toolCallUpdate(update) {
    if (update.title) this.#rememberTitle(update.toolCallId, one(update.title));
    const title = this.#toolTitles.get(update.toolCallId) ?? one(update.toolCallId);
    const first = (update.content ?? []).map(contentText).find((t) => t !== '');
    // An update with neither status nor content says nothing worth a line.
    if (!update.status && first === undefined) return;
    const status = one(update.status ?? 'updated');
    const colour = status === 'completed' ? 'green' : status === 'failed' ? 'red' : 'dim';
    const detail = first === undefined ? '' : ` ${this.#style('dim', summary(first))}`;
    this.line(`  ↳ ${title}: ${this.#style(colour, status)}${detail}`);
  }

  #plan(entries) {
    this.line(this.#style('bold', 'Plan:'));
    for (const entry of entries) {
      const mark = PLAN_MARK[entry?.status] ?? '[?]';
      const priority = entry?.priority ? this.#style('dim', ` (${one(entry.priority)})`) : '';
      this.#write(`  ${mark} ${one(entry?.content)}${priority}\n`);
    }
  }

  // ---- rendering from a session view (the chat) -------------------------
  //
  // What is printed must not depend on how the view's changes were
  // coalesced (a replay of the same session prints the same): entries
  // (and tool calls, at their entry's place) are printed in index order,
  // text as it grows, a tool call's line when first seen and one line
  // when it completes or fails; the plan, mode, commands and title have
  // no place among the entries, so they are printed at settle points (the
  // end of a turn, before a question to the user).

  #shownText = new Map(); // entry index → characters written
  #shownTools = new Map(); // toolCallId → last status line written ('' = the tool line only)
  #toolEntries = new Map(); // toolCallId → entry index, for tool calls already shown
  #unsettled = { plan: null, modes: false, commands: false, info: false };
  #shownModes = undefined;
  #shownCommands = undefined;
  #shownTitle = undefined;
  #lastState = null;

  /** The view's state when the chat starts: what needs no announcement. */
  viewStarted(state) {
    this.#shownModes = state.modes?.currentModeId;
    this.#lastState = state;
  }

  /** A change event of a session view, and the state after it (see applyChanges). */
  changes(changes, state) {
    this.#lastState = state;
    const first = state.entries.length > 0 ? state.entries[0].index : 0;
    for (const index of this.#shownText.keys()) if (index < first) this.#shownText.delete(index);
    for (const [id, index] of this.#toolEntries) if (index < first) this.#toolEntries.delete(id);
    const touched = new Set();
    for (const e of changes.newEntries ?? []) touched.add(e.index);
    for (const a of changes.appended ?? []) touched.add(a.index);
    for (const id of [...Object.keys(changes.toolCalls ?? {}), ...Object.keys(changes.toolCallFields ?? {})]) {
      if (this.#toolEntries.has(id)) touched.add(this.#toolEntries.get(id));
    }
    for (const index of [...touched].sort((a, b) => a - b)) {
      const entry = state.entries[index - first];
      if (entry) this.#entry(entry, state);
    }
    if (changes.plan && Array.isArray(changes.plan.entries)) this.#unsettled.plan = changes.plan;
    if (changes.modes) this.#unsettled.modes = true;
    if (changes.commands) this.#unsettled.commands = true;
    if (changes.info) this.#unsettled.info = true;
  }

  /** Print what changed outside the transcript: the plan, mode, commands, title. */
  settle() {
    const state = this.#lastState;
    const pending = this.#unsettled;
    this.#unsettled = { plan: null, modes: false, commands: false, info: false };
    if (!state) return;
    if (pending.plan) this.#plan(pending.plan.entries);
    const mode = state.modes?.currentModeId;
    if (pending.modes && mode !== undefined && mode !== this.#shownModes) {
      this.#shownModes = mode;
      this.note(`(mode: ${one(mode)})`);
    }
    if (pending.commands) {
      const names = commandNames(state.commands.availableCommands);
      if (names !== this.#shownCommands) this.note(`(commands: ${names})`);
      this.#shownCommands = names;
    }
    if (pending.info && typeof state.info.title === 'string' && state.info.title !== this.#shownTitle) {
      this.#shownTitle = state.info.title;
      this.note(`(session: ${one(state.info.title)})`);
    }
  }

  #entry(entry, state) {
    switch (entry.kind) {
      case 'agent':
      case 'thought':
      case 'user': {
        const all = entry.content.map(contentText).join('');
        const shown = this.#shownText.get(entry.index) ?? 0;
        // A pair split at the end (a surrogate pair, CR LF) waits for its other half.
        const end = /[\ud800-\udbff\r]$/.test(all) ? all.length - 1 : all.length;
        if (end <= shown) return;
        this.#shownText.set(entry.index, end);
        const fresh = all.slice(shown, end);
        if (entry.kind === 'agent') return this.#chunk('agent', fresh, '', null);
        if (entry.kind === 'thought') return this.#chunk('thought', fresh, 'thinking: ', 'dim');
        return this.#chunk('user', fresh, 'you: ', 'cyan');
      }
      case 'tool_call': {
        const call = state.toolCalls[entry.toolCallId];
        if (!call) return;
        if (this.#shownTools.has(call.toolCallId)) return this.#toolStatus(call);
        const title = one(call.title ?? call.toolCallId);
        this.#rememberTitle(call.toolCallId, title);
        this.#shownTools.set(call.toolCallId, '');
        this.#toolEntries.set(call.toolCallId, entry.index);
        if (this.#shownTools.size > MAX_REMEMBERED) this.#shownTools.delete(this.#shownTools.keys().next().value);
        this.line(
          `${this.#style('yellow', '▸ tool')} ${this.#style('bold', title)}${call.kind ? ` [${one(call.kind)}]` : ''}`,
        );
        return this.#toolStatus(call);
      }
      case 'notice':
        return this.note(`(${one(entry.notice?.severity ?? 'notice')}: ${one(entry.notice?.title)})`);
      case 'compaction':
        return this.note('(context compaction)');
      case 'unknown':
        return this.note(`(update: ${one(entry.update?.sessionUpdate ?? 'unknown')})`);
    }
  }

  /** One line when a tool call completes or fails. */
  #toolStatus(call) {
    if (typeof call.title === 'string') this.#rememberTitle(call.toolCallId, one(call.title));
    const status = call.status;
    if (status !== 'completed' && status !== 'failed') return;
    if (this.#shownTools.get(call.toolCallId) === status) return;
    this.#shownTools.set(call.toolCallId, status);
    const title = this.#toolTitles.get(call.toolCallId) ?? one(call.toolCallId);
    const first = (Array.isArray(call.content) ? call.content : []).map(contentText).find((t) => t !== '');
    const detail = first === undefined ? '' : ` ${this.#style('dim', summary(first))}`;
    this.line(`  ↳ ${title}: ${this.#style(status === 'completed' ? 'green' : 'red', status)}${detail}`);
  }

  /**
   * The permission question: the tool call and numbered options, each
   * option's label one inert line (`optionLabels`), so what the screen
   * shows next to a number is the option that number picks.
   */
  permission({ toolCall = {}, options = [] }) {
    const title = one(
      toolCall.title ?? this.#toolTitles.get(toolCall.toolCallId) ?? toolCall.toolCallId ?? 'a tool call',
    );
    this.line(
      `${this.#style('yellow', 'Permission requested:')} ${this.#style('bold', title)}${toolCall.kind ? ` [${one(toolCall.kind)}]` : ''}`,
    );
    if (toolCall.rawInput !== undefined)
      this.#write(`  ${this.#style('dim', `input: ${summary(JSON.stringify(toolCall.rawInput), 200)}`)}\n`);
    for (const [i, label] of optionLabels(options).entries()) this.#write(`  ${i + 1}) ${label}\n`);
  }

  /** A question from the agent (`_agentao.cn/ask_user`). */
  question(value) {
    this.line(`${this.#style('yellow', 'The agent asks:')} ${text(value)}`);
  }

  turnEnd(stopReason) {
    this.note(`[turn ended: ${one(stopReason)}]`);
  }
}
