// Reading the user's answers: one line queue for prompts, permission
// choices and agent questions, so typed-ahead or piped lines are consumed
// in order, and a pending question can be withdrawn (turn cancelled).
import { createInterface } from 'node:readline';
import { optionName } from './render.mjs';

export class LineInput {
  #rl;
  #terminal;
  #output;
  #queue = [];
  #waiter = null; // { resolve, prompt }
  #closed = false;
  #promptShown = false; // a TTY prompt is on screen, awaiting a line

  /**
   * `onInterrupt` runs on Ctrl-C (a TTY in raw mode delivers it as a key,
   * not a signal). On a TTY readline edits and echoes the line; otherwise
   * each consumed line is echoed after its prompt, for a readable transcript.
   */
  constructor({ input, output, onInterrupt }) {
    this.#terminal = input.isTTY === true && output.isTTY === true;
    this.#output = output;
    this.#rl = createInterface({
      input,
      output: this.#terminal ? output : undefined,
      terminal: this.#terminal,
      prompt: '',
      crlfDelay: Infinity,
    });
    this.#rl.on('line', (line) => this.#onLine(line));
    this.#rl.on('close', () => this.#onClose());
    this.#rl.on('SIGINT', () => onInterrupt());
  }

  get closed() {
    return this.#closed;
  }

  #onLine(line) {
    this.#promptShown = false;
    const waiter = this.#waiter;
    if (waiter) {
      this.#waiter = null;
      if (!this.#terminal) this.#output.write(`${waiter.prompt}${line}\n`);
      waiter.resolve(line);
    } else {
      this.#queue.push(line);
    }
  }

  #onClose() {
    this.#closed = true;
    this.#promptShown = false;
    const waiter = this.#waiter;
    this.#waiter = null;
    if (waiter) {
      if (this.#terminal) this.#output.write('\n');
      waiter.resolve(null);
    }
  }

  /**
   * The next line the user enters, shown after `prompt`; `null` at end of
   * input or when `signal` aborts first.
   */
  next(prompt, signal) {
    if (signal?.aborted) return Promise.resolve(null);
    if (this.#queue.length > 0) {
      const line = this.#queue.shift();
      if (!this.#terminal) this.#output.write(`${prompt}${line}\n`);
      return Promise.resolve(line);
    }
    if (this.#closed) return Promise.resolve(null);
    return new Promise((resolve) => {
      const onAbort = () => {
        if (this.#waiter?.resolve !== done) return;
        this.#waiter = null;
        this.breakLine(true);
        resolve(null);
      };
      const done = (line) => {
        signal?.removeEventListener('abort', onAbort);
        resolve(line);
      };
      this.#waiter = { resolve: done, prompt };
      signal?.addEventListener('abort', onAbort, { once: true });
      if (this.#terminal) {
        this.#rl.setPrompt(prompt);
        this.#rl.prompt();
        this.#promptShown = true;
      }
    });
  }

  /**
   * Move off a prompt that is on screen so other output starts on a fresh
   * line; `discard` also drops what the user had typed there.
   */
  breakLine(discard = false) {
    if (!this.#promptShown) return;
    this.#promptShown = false;
    if (discard) {
      this.#rl.write(null, { ctrl: true, name: 'e' });
      this.#rl.write(null, { ctrl: true, name: 'u' });
    }
    this.#output.write('\n');
  }

  close() {
    this.#rl.close();
  }
}

/**
 * Ask which permission option to take. Accepts the option's number, its
 * optionId or its name as shown. Resolves to the ACP `RequestPermissionOutcome`.
 */
export async function choosePermission(input, renderer, params, signal) {
  const options = Array.isArray(params.options) ? params.options : [];
  const names = options.map(optionName);
  renderer.permission({ ...params, options });
  if (options.length === 0) return { outcome: 'cancelled' };
  for (;;) {
    const answer = await input.next(`Choose 1-${options.length}: `, signal);
    if (answer === null) return { outcome: 'cancelled' };
    const text = answer.trim();
    const n = Number(text);
    // A name picks an option only if it names one: look-alikes need the number.
    const named = options.filter((o, i) => o?.optionId === text || names[i].toLowerCase() === text.toLowerCase());
    const option =
      (Number.isInteger(n) && n >= 1 && n <= options.length ? options[n - 1] : undefined) ??
      (named.length === 1 ? named[0] : undefined);
    if (option) return { outcome: 'selected', optionId: option?.optionId };
    renderer.note(`Type a number from 1 to ${options.length} (Ctrl-C cancels the turn).`);
  }
}

/** Answer an agent question (`_agentao.cn/ask_user`); cancelled at end of input or on cancel. */
export async function askUser(input, renderer, params, signal) {
  renderer.question(params?.question ?? '(no question text)');
  const answer = await input.next('Answer: ', signal);
  return answer === null ? { outcome: 'cancelled' } : { outcome: 'answered', text: answer };
}
