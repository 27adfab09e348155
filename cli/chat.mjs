// `acp-native chat`: an interactive terminal host for any ACP agent, built
// on AcpClient. One session; each line the user enters is a prompt.
import { resolve } from 'node:path';
import { AcpClient } from '../index.mjs';
import { Renderer } from './render.mjs';
import { LineInput, choosePermission, askUser } from './prompts.mjs';
import { createRequire } from 'node:module';

const { applyChanges } = createRequire(import.meta.url)('../lib/session-fold.js');
const { sanitizeForTerminal } = createRequire(import.meta.url)('../lib/sanitize.js');
const one = (value) => sanitizeForTerminal(value ?? '', { singleLine: true });

const QUIT = Symbol('quit');

/**
 * Run a chat session until the user leaves or the agent exits. Resolves to
 * the process exit code (0: the user left; 1: the agent failed).
 * `clientOptions` are merged into the AcpClient options (`record` adds its
 * trace hook there).
 */
export async function runChat({
  agent,
  cwd: cwdOption,
  showStderr = false,
  clientOptions = {},
  resume,
  stdin = process.stdin,
  stdout = process.stdout,
}) {
  const cwd = resolve(cwdOption ?? '.'); // ACP wants an absolute session cwd
  let input;
  const renderer = new Renderer(stdout, { beforeWrite: () => input?.breakLine() });
  let sessionId = null;
  let turn = null; // { cancelled } while a prompt is running
  let exitCode = 0;
  let quitting = false;
  let resolveQuit;
  const quit = new Promise((resolve) => (resolveQuit = resolve));
  const requestQuit = (code = 0) => {
    if (quitting) return;
    quitting = true;
    exitCode = code;
    resolveQuit(QUIT);
  };
  const untilQuit = (promise) => Promise.race([promise, quit]);

  let client;
  let view = null; // the session's live view: the chat renders from it
  const interrupt = () => {
    if (turn && !turn.cancelled && !quitting) {
      turn.cancelled = true;
      input.breakLine(true);
      renderer.note('^C cancelling the turn… (Ctrl-C again to exit)');
      client.cancel(sessionId).catch((err) => {
        renderer.error(`cancel failed: ${err.message}`);
      });
      return;
    }
    requestQuit(exitCode);
  };

  input = new LineInput({ input: stdin, output: stdout, onInterrupt: interrupt });
  const onSignal = () => interrupt();
  const onHangup = () => requestQuit(exitCode);
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onHangup);
  process.on('SIGHUP', onHangup);

  try {
    try {
      client = new AcpClient({
        command: agent.command,
        args: agent.args,
        cwd,
        forwardStderr: showStderr,
        // The session renders from its view; this sees only what the view
        // does not fold (updates before the session was known).
        onSessionUpdate: ({ update }) => renderer.update(update),
        handlers: {
          'session/request_permission': async (params, { signal }) => {
            view?.flush(); // show the tool call before the question
            renderer.settle();
            return { outcome: await choosePermission(input, renderer, params, signal) };
          },
          '_agentao.cn/ask_user': (params, { signal }) => {
            view?.flush();
            renderer.settle();
            return askUser(input, renderer, params, signal);
          },
        },
        ...clientOptions,
      });
    } catch (err) {
      renderer.error(`cannot start the agent: ${err.message}`);
      return 1;
    }
    // Each line of the agent's stderr marked as such (it cannot pass for the chat's own lines).
    client.on('stderr', (text) =>
      renderer.note(
        text
          .replace(/\n$/, '')
          .split('\n')
          .map((l) => `agent stderr: ${one(l)}`)
          .join('\n'),
      ),
    );
    client.on('protocolNoise', ({ line }) => renderer.note(`agent stdout (not JSON): ${one(line.slice(0, 200))}`));
    client.on('protocolError', ({ kind, message }) => renderer.note(`protocol error (${one(kind)}): ${one(message)}`));
    client.on('handlerError', (err) => renderer.error(`handler error: ${err?.message ?? err}`));
    client.on('exit', (info) => {
      if (quitting) return;
      renderer.error(`The agent exited (${info.signal ? `signal ${info.signal}` : `code ${info.exitCode}`}).`);
      const tail = (info.stderrTail ?? '')
        .trim()
        .split('\n')
        .slice(-10)
        .map((l) => `agent stderr: ${one(l)}`)
        .join('\n');
      if (tail) renderer.note(tail);
      requestQuit(1);
    });

    const init = await untilQuit(client.initialize());
    if (init === QUIT) return exitCode;
    const info = init.agentInfo;
    const name = info ? one(`${info.title ?? info.name} ${info.version ?? ''}`.trim()) : 'the agent';
    if (resume !== undefined) {
      // A stored session (sessions resume): continued, its history shown.
      const recovered = await untilQuit(client.recover(resume));
      if (recovered === QUIT) return exitCode;
      sessionId = recovered.sessionId;
      view = client.session(sessionId, { forward: false });
      const how = {
        resume: 'resumed by the agent',
        load: 'loaded by the agent',
        fresh: 'as a new agent session (the agent does not know the history shown)',
      }[recovered.how];
      renderer.note(
        `Stored session ${one(resume)} continued ${how}${recovered.reason ? ` (${one(recovered.reason)})` : ''}.`,
      );
    } else {
      const session = await untilQuit(client.newSession({ cwd }));
      if (session === QUIT) return exitCode;
      sessionId = session.sessionId;
      const { sessionId: _, ...setup } = session;
      view = client.session(sessionId, { setup, forward: false });
    }
    const state = view.snapshot();
    renderer.viewStarted(state);
    view.on('change', (changes) => renderer.changes(changes, applyChanges(state, changes)));
    renderer.note(
      `Connected to ${name}, session ${one(sessionId)}. Enter a prompt; Ctrl-C cancels a turn, Ctrl-C when idle or Ctrl-D exits.`,
    );

    for (;;) {
      const text = await untilQuit(input.next('> '));
      if (text === QUIT || text === null) break;
      const prompt = text.trim();
      if (prompt === '') continue;
      if (prompt === '/exit' || prompt === '/quit') break;
      turn = { cancelled: false };
      try {
        const result = await untilQuit(client.prompt({ sessionId, prompt: text }));
        if (result === QUIT) break;
        view.flush();
        renderer.settle();
        renderer.turnEnd(result?.stopReason ?? 'unknown');
      } catch (err) {
        view.flush();
        renderer.settle();
        if (err.code === 'ERR_ACP_CLOSED') break; // the exit listener reported it
        renderer.error(`The prompt failed: ${err.message}`);
      } finally {
        turn = null;
      }
    }
    return exitCode;
  } catch (err) {
    if (!quitting) renderer.error(`${err.message}${err.stderrTail ? `\n${err.stderrTail.trim()}` : ''}`);
    return quitting ? exitCode : 1;
  } finally {
    quitting = true;
    input.close();
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onHangup);
    process.off('SIGHUP', onHangup);
    if (client) await client.close();
  }
}
