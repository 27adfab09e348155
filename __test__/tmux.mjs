// Drive a command in a real terminal: a private tmux server, keys in,
// screen text out. Used by the CLI tests.
import { execFileSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

/** Throws a clear error when tmux is not installed (CI installs it). */
export function requireTmux() {
  try {
    execFileSync('tmux', ['-V'], { stdio: 'pipe' });
  } catch {
    throw new Error(
      'tmux is required for the CLI terminal tests but was not found: install it (apt-get install -y tmux)',
    );
  }
}

let serial = 0;

/** A tmux session on its own server socket (removed on close), 120×40, running `shellCommand`. */
export class Terminal {
  #socket = join(tmpdir(), `acp-native-tmux-${process.pid}-${++serial}`);

  constructor(shellCommand, { cwd = process.cwd(), env = {} } = {}) {
    this.#tmux(['new-session', '-d', '-s', 'main', '-x', '120', '-y', '40', '-c', cwd, shellCommand], {
      env: { ...process.env, ...env },
    });
  }

  #tmux(args, options = {}) {
    return execFileSync('tmux', ['-S', this.#socket, '-f', '/dev/null', ...args], {
      encoding: 'utf8',
      stdio: 'pipe',
      ...options,
    });
  }

  /** Type `keys` (tmux key names such as `Enter`, `C-c`, `C-d` are allowed). */
  send(...keys) {
    this.#tmux(['send-keys', '-t', 'main', ...keys]);
  }

  /** Type literal text, then Enter. */
  type(text) {
    this.#tmux(['send-keys', '-t', 'main', '-l', text]);
    this.#tmux(['send-keys', '-t', 'main', 'Enter']);
  }

  /** The whole pane including scrollback, lines joined as displayed, without the empty rows below the text. */
  screen() {
    const lines = this.#tmux(['capture-pane', '-p', '-J', '-t', 'main', '-S', '-']).split('\n');
    while (lines.length > 0 && lines.at(-1).trim() === '') lines.pop();
    return `${lines.join('\n')}\n`;
  }

  /**
   * Poll the screen until `pattern` matches (generous deadline: this is a
   * wait, not a timing assertion). Returns the screen text.
   */
  async waitFor(pattern, { timeoutMs = 30_000, from = 0 } = {}) {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const text = this.screen();
      if (pattern.test(text.slice(from))) return text;
      if (Date.now() > deadline) {
        throw new Error(`the terminal never showed ${pattern} within ${timeoutMs} ms; screen:\n${text}`);
      }
      await sleep(50);
    }
  }

  /** The pane's title (what OSC 0/2 sequences set). */
  title() {
    return this.#tmux(['display-message', '-p', '-t', 'main', '#{pane_title}']).trim();
  }

  /** The names and contents of the paste buffers (what OSC 52 sets with set-clipboard on). */
  buffers() {
    const names = this.#tmux(['list-buffers', '-F', '#{buffer_name}']).split('\n').filter(Boolean);
    return names.map((name) => ({ name, text: this.#tmux(['show-buffer', '-b', name]) }));
  }

  /** A server option (`set-option -s NAME VALUE`), e.g. set-clipboard on. */
  setServerOption(name, value) {
    this.#tmux(['set-option', '-s', name, value]);
  }

  close() {
    try {
      this.#tmux(['kill-server']);
    } catch {
      // already gone
    }
    rmSync(this.#socket, { force: true });
  }
}
