// examples/agentao-host.mjs (the VS Code-style example host) driven like a
// user would: prompts and dialog answers on stdin, Ctrl-C to stop a turn,
// stdin EOF to quit, and a second run that resumes the saved session.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { peers, scratchDir, agentaoEnv } from './helpers.mjs';
import { startFakeLlm } from './fake-llm.mjs';

const HOST = fileURLToPath(new URL('../examples/agentao-host.mjs', import.meta.url));

/** The host as a child process; `until(re)` waits for output matching re after the last match. */
function runHost(t, { home, workspace, llm, agent = peers.agentao }) {
  const child = spawn(
    process.execPath,
    [HOST, '--workspace', workspace, '--agent', agent, '--log', join(home, 'agent.log')],
    {
      env: agentaoEnv({ home, llm }),
      stdio: ['pipe', 'pipe', 'pipe'],
    },
  );
  t.after(() => child.exitCode === null && child.kill('SIGKILL'));
  let out = '';
  let consumed = 0;
  let errors = '';
  const waiters = [];
  const check = () => {
    for (const w of waiters.splice(0)) {
      const m = w.re.exec(out.slice(consumed));
      if (m) {
        consumed += m.index + m[0].length;
        w.resolve(m);
      } else waiters.push(w);
    }
  };
  child.stdout.setEncoding('utf8').on('data', (d) => {
    out += d;
    check();
  });
  child.stderr.setEncoding('utf8').on('data', (d) => (errors += d));
  let done = false;
  const failAll = () => {
    for (const w of waiters.splice(0))
      w.reject(new Error(`host exited before printing ${w.re}; output:\n${out}\nstderr:\n${errors}`));
  };
  const exited = new Promise((resolve) => child.on('close', (code, signal) => resolve({ code, signal })));
  exited.then(() => {
    done = true;
    failAll();
  });
  return {
    child,
    exited,
    output: () => out,
    until(re) {
      return new Promise((resolve, reject) => {
        waiters.push({ re, resolve, reject });
        check();
        if (done) failAll();
      });
    },
    type(text) {
      child.stdin.write(`${text}\n`);
    },
  };
}

test('the example host: permission dialog, ask_user, stop button, quit, and resume of the saved session', async (t) => {
  const llm = await startFakeLlm();
  t.after(() => llm.close());
  const home = scratchDir(t, 'host-home');
  const workspace = scratchDir(t, 'host-ws');

  const host = runHost(t, { home, workspace, llm });
  const [, sessionId] = await host.until(/\[session\] new (sess_[0-9a-f]+)/);
  await host.until(/^ready$/m);

  // A shell command: the quick pick appears; "1" = Allow once.
  host.type('shell: touch made-by-host.txt');
  await host.until(
    /\[permission\] run_shell_command touch made-by-host.txt\n {2}1\) Allow once\n {2}2\) Always allow\n {2}3\) Reject once\n {2}4\) Always reject/,
  );
  host.type('1');
  await host.until(/turn ended: end_turn/);
  assert.ok(existsSync(join(workspace, 'made-by-host.txt')));

  // ask_user: the input box; the answer reaches the model.
  await host.until(/^ready$/m);
  host.type('ask: Which name should I use?');
  await host.until(/\[question\] Which name should I use\?/);
  host.type('Ada Lovelace');
  await host.until(/agent> The user answered: Ada Lovelace/);
  await host.until(/turn ended: end_turn/);

  // The stop button (Ctrl-C) during a slow stream.
  await host.until(/^ready$/m);
  host.type('slow');
  await host.until(/agent> Starting a long answer/);
  host.child.kill('SIGINT');
  await host.until(/turn ended: cancelled/);

  // The stop button while the permission dialog is open: dismissed, turn cancelled.
  await host.until(/^ready$/m);
  host.type('shell: touch never.txt');
  await host.until(/choose 1-4:/);
  host.child.kill('SIGINT');
  await host.until(/\[dialog dismissed\][\s\S]*turn ended: cancelled/);
  assert.equal(existsSync(join(workspace, 'never.txt')), false);

  // Quit (stdin EOF): the agent is closed gracefully, so agentao saves the session.
  await host.until(/^ready$/m);
  host.child.stdin.end();
  await host.until(new RegExp(`\\[agent\\] closed \\(code 0\\); session ${sessionId} saved`));
  assert.deepEqual(await host.exited, { code: 0, signal: null });

  // Next "editor start": the remembered session is loaded and its history replayed.
  const again = runHost(t, { home, workspace, llm });
  await again.until(/you> shell: touch made-by-host.txt/);
  await again.until(/you> ask: Which name should I use\?/);
  await again.until(new RegExp(`\\[session\\] resumed ${sessionId}`));
  await again.until(/^ready$/m);
  again.type('what did I ask before');
  await again.until(/turn ended: end_turn/);
  const history = llm.chats
    .at(-1)
    .body.messages.map((m) => String(m.content))
    .join('\n');
  assert.match(history, /Ada Lovelace/);
  again.child.stdin.end();
  assert.deepEqual(await again.exited, { code: 0, signal: null });
  // The output channel got the agent's stderr.
  assert.ok(existsSync(join(home, 'agent.log')));
});

test('the example host: mode picker, and a crashed agent is restarted with a new session', async (t) => {
  const llm = await startFakeLlm();
  t.after(() => llm.close());
  const home = scratchDir(t, 'host-home');
  const workspace = scratchDir(t, 'host-ws');
  const host = runHost(t, { home, workspace, llm });
  const [, pid] = await host.until(/\(pid (\d+)\)/);
  await host.until(/^ready$/m);

  host.type('/mode full-access');
  await host.until(/\[mode\] full-access/);
  await host.until(/^ready$/m);
  host.type('shell: touch no-dialog.txt');
  await host.until(/turn ended: end_turn/);
  assert.doesNotMatch(host.output(), /\[permission\]/);
  assert.ok(existsSync(join(workspace, 'no-dialog.txt')));

  // The agent dies under the host: it is restarted, and since a killed
  // agentao saved nothing, the host falls back to a new session.
  await host.until(/^ready$/m);
  process.kill(Number(pid), 'SIGKILL');
  await host.until(/\[agent\] exited \(code null, signal SIGKILL\)/);
  await host.until(/\[agent\] restarted \(attempt 1, pid \d+\)/);
  await host.until(/\[session\] (could not resume|new)/);
  await host.until(/^ready$/m);
  host.type('hello after the crash');
  await host.until(/turn ended: end_turn/);
  host.child.stdin.end();
  assert.deepEqual(await host.exited, { code: 0, signal: null });
});

test('the example host explains why it cannot start: no agent binary, no LLM settings', async (t) => {
  const home = scratchDir(t, 'host-home');
  const workspace = scratchDir(t, 'host-ws');
  const missing = runHost(t, { home, workspace, llm: null, agent: join(home, 'no-such-agentao') });
  await missing.until(/\[agent\] cannot start .*no-such-agentao \(set --agent or AGENTAO_PATH\): ERR_ACP_SPAWN/);
  assert.equal((await missing.exited).code, 1);

  const unconfigured = runHost(t, { home, workspace, llm: null });
  await unconfigured.until(/\[agent\] could not open a session: ERR_ACP_RPC .*OPENAI_API_KEY/);
  assert.equal((await unconfigured.exited).code, 1);
});
