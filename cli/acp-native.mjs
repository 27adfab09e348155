#!/usr/bin/env node
// acp-native CLI: `chat`, `record`, `replay`, `export`, `sessions`, `agents` and `doctor` (see `acp-native --help`).
import { createRequire } from 'node:module';
import { parseArgs, UsageError, USAGE } from './args.mjs';

// Everything printed goes through the one sanitizer (lib/sanitize.js).
const { sanitizeForTerminal } = createRequire(import.meta.url)('../lib/sanitize.js');

/** `--fs` / `--terminals`: the built-in handlers, confined to the session cwd. */
function builtins(options) {
  return { ...(options.fs ? { fs: true } : {}), ...(options.terminals ? { terminals: true } : {}) };
}

async function main(argv) {
  let parsed;
  try {
    parsed = parseArgs(argv);
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    process.stderr.write(`acp-native: ${sanitizeForTerminal(err.message)}\n\n${USAGE}`);
    return 2;
  }
  const { command, options = {}, file } = parsed;
  let { agent } = parsed;
  switch (command) {
    case 'help':
      process.stdout.write(USAGE);
      return 0;
    case 'version':
      process.stdout.write(`${createRequire(import.meta.url)('../package.json').version}\n`);
      return 0;
    case 'chat': {
      const { runChat } = await import('./chat.mjs');
      let env;
      if (parsed.agentId !== undefined) {
        // A registry id: installed (with a progress bar) and launched without a wrapper.
        const { makeManager, progressPrinter } = await import('./agents.mjs');
        const launch = await reportingOwnErrors(() =>
          makeManager(options).launch(parsed.agentId, { onProgress: progressPrinter() }),
        );
        if (launch === 1) return 1;
        agent = { command: launch.command, args: launch.args };
        env = launch.env;
      }
      // --save: the session goes to the session store (--store is the agent store here).
      const store = options.save === true ? await openSessionStore() : null;
      if (store === 1) return 1;
      try {
        return await runChat({
          agent,
          cwd: options.cwd,
          showStderr: options.stderr === true,
          clientOptions: { ...builtins(options), ...(env ? { env } : {}), ...(store ? { store } : {}) },
        });
      } finally {
        await store?.close();
      }
    }
    case 'agents': {
      const { runAgents } = await import('./agents.mjs');
      return reportingOwnErrors(() => runAgents({ sub: parsed.sub, id: parsed.id, options }));
    }
    case 'record': {
      const { runRecord } = await import('./record.mjs');
      return runRecord({
        agent,
        cwd: options.cwd,
        showStderr: options.stderr === true,
        out: options.out,
        clientOptions: builtins(options),
      });
    }
    case 'export': {
      const { runExport } = await import('./export.mjs');
      return runExport({ file, agent, options });
    }
    case 'replay': {
      const { runReplay } = await import('./replay.mjs');
      return runReplay({ file, realtime: options.realtime === true });
    }
    case 'sessions': {
      const { runSessions } = await import('./sessions.mjs');
      return runSessions({ action: parsed.action, arg: parsed.arg, agent, options, clientOptions: builtins(options) });
    }
    case 'doctor': {
      const { runDoctor } = await import('./doctor.mjs');
      return runDoctor({ json: options.json === true, binary: options.binary });
    }
  }
  return 2;
}

/** The session store `chat --save` records into, or 1 (said why) if it cannot open. */
async function openSessionStore() {
  const { storeDir } = await import('./sessions.mjs');
  const { SessionStore } = createRequire(import.meta.url)('../lib/store.js');
  return reportingOwnErrors(() => SessionStore.open(storeDir({})));
}

/** An error of ours (a bad index, a refused archive…): its message, not a stack. */
async function reportingOwnErrors(run) {
  try {
    return await run();
  } catch (err) {
    if (typeof err?.code !== 'string' || !err.code.startsWith('ERR_ACP_')) throw err;
    process.stderr.write(`acp-native: ${sanitizeForTerminal(err.message)}\n`);
    return 1;
  }
}

main(process.argv.slice(2)).then(
  (code) => {
    // Exit once everything written has been flushed (stdout may be a pipe).
    process.stdout.write('', () => process.exit(code));
  },
  (err) => {
    process.stderr.write(`acp-native: ${sanitizeForTerminal(err?.stack ?? err)}\n`);
    process.exit(1);
  },
);
