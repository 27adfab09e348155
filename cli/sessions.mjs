// `acp-native sessions`: the session store from the command line — list,
// search, show, export, resume. Everything an agent wrote (titles,
// transcripts, snippets) goes through sanitizeForTerminal before it is
// printed; JSON output is JSON (escaped), files are written safely.
import { createRequire } from 'node:module';
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';

const require = createRequire(import.meta.url);
const { SessionStore } = require('../lib/store.js');
const { toMarkdown } = require('../lib/session-fold.js');
const { sanitizeForTerminal } = require('../lib/sanitize.js');
const { writeFileSafely } = require('../lib/safe-write.js');

const say = (text) => process.stderr.write(`acp-native: ${sanitizeForTerminal(text)}\n`);
const one = (v) => sanitizeForTerminal(String(v ?? ''), { singleLine: true });

/** The store directory: --store, $ACP_NATIVE_STORE, or the per-user default. */
export function storeDir(options, env = process.env) {
  if (options.store) return resolve(options.store);
  if (env.ACP_NATIVE_STORE) return resolve(env.ACP_NATIVE_STORE);
  return join(env.XDG_DATA_HOME || join(homedir(), '.local', 'share'), 'acp-native', 'sessions');
}

function line(s) {
  const when = new Date(s.updatedAt).toISOString().replace('T', ' ').slice(0, 16);
  const agent = s.agent?.name ?? s.agent?.command ?? '?';
  return `${one(s.id)}  ${when}  ${one(s.state)}  ${one(agent)}  ${one(s.title ?? '(untitled)')}`;
}

/** Resolves to the exit code. */
export async function runSessions({ action, arg, agent, options, clientOptions = {} }) {
  const limit = options.limit === undefined ? undefined : Number(options.limit);
  if (limit !== undefined && !(Number.isInteger(limit) && limit >= 0)) {
    say('--limit must be a whole number');
    return 2;
  }
  const format = options.format ?? 'md';
  if (format !== 'md' && format !== 'json') {
    say(`--format must be md or json, not '${format}'`);
    return 2;
  }
  let store;
  try {
    store = await SessionStore.open(storeDir(options));
  } catch (err) {
    say(`${err.code ?? 'error'}: ${err.message}`);
    return 1;
  }
  try {
    switch (action) {
      case 'list':
      case 'search': {
        const found = action === 'list' ? await store.list({ limit }) : await store.search(arg, { limit });
        if (options.json) process.stdout.write(`${JSON.stringify(found, null, 2)}\n`);
        else {
          for (const s of found) {
            process.stdout.write(`${line(s)}\n`);
            if (s.snippet) process.stdout.write(`    ${one(s.snippet)}\n`);
          }
          if (found.length === 0) say(action === 'list' ? 'no stored sessions' : 'no stored session matches');
        }
        return 0;
      }
      case 'show': {
        const s = await store.get(arg);
        process.stdout.write(`${line(s)}\n\n`);
        process.stdout.write(sanitizeForTerminal(s.view ? toMarkdown(s.view) : '(no view stored)\n'));
        return 0;
      }
      case 'export': {
        const exported = await store.export(arg);
        const text =
          format === 'json'
            ? `${JSON.stringify(exported, null, 2)}\n`
            : exported.session.view
              ? toMarkdown(exported.session.view)
              : '';
        if (options.out) await writeFileSafely(resolve(options.out), text);
        else process.stdout.write(format === 'json' ? text : sanitizeForTerminal(text));
        return 0;
      }
      case 'resume': {
        const s = await store.get(arg);
        const command =
          agent ??
          (typeof s.agent?.command === 'string' ? { command: s.agent.command, args: s.agent.args ?? [] } : null);
        if (!command) {
          say('the stored session does not say how its agent was started: give the agent command after --');
          return 2;
        }
        const { runChat } = await import('./chat.mjs');
        return await runChat({
          agent: command,
          cwd: options.cwd ?? s.cwd ?? undefined,
          showStderr: options.stderr === true,
          clientOptions: { ...clientOptions, store },
          resume: arg,
        });
      }
    }
    return 2;
  } catch (err) {
    say(`${err.code ?? 'error'}: ${err.message}`);
    return 1;
  } finally {
    await store.close();
  }
}
