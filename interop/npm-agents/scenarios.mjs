// The published-agent suite: every client feature an agent uses, driven
// as a host would, on the scripted fake model. One file per agent
// (interop/npm-<id>.test.mjs) calls agentSuite(id) so agents run in
// parallel; what an agent uses comes from its recipe (`uses`, `quirks`).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { RECIPES } from '../agents/recipes.mjs';
import { agentRequests, choose, gone, processTree, startAgent, textOf } from './harness.mjs';
import { ESCAPED_TEXT } from './tools.mjs';

const TEXT = 'alpha bravo charlie delta echo foxtrot golf hotel india';

/** Resolves once an agent_message_chunk of `sessionId` containing `needle` arrived after entry `from` (rejects after a generous minute). */
function chunkWith(waitFor, seen, sessionId, needle, from) {
  let timer;
  const late = new Promise(
    (_, reject) => (timer = setTimeout(() => reject(new Error(`no chunk with ${JSON.stringify(needle)}`)), 60_000)),
  );
  return Promise.race([
    late,
    waitFor(
      (e) =>
        seen.indexOf(e) >= from &&
        e.kind === 'update' &&
        e.sessionId === sessionId &&
        e.update.sessionUpdate === 'agent_message_chunk' &&
        (e.update.content?.text ?? '').includes(needle),
    ),
  ]).finally(() => clearTimeout(timer));
}

/** Resolves once `cond()` holds; rejects naming `what` after a generous 20 s. */
async function until(cond, what) {
  for (let waited = 0; !cond(); waited += 50) {
    if (waited > 20_000) throw new Error(what);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** The text of the view's last entry of `kind`. */
function lastEntryText(view, kind) {
  const entry = view
    .snapshot()
    .entries.filter((e) => e.kind === kind)
    .at(-1);
  return (entry?.content ?? []).map((b) => b.text ?? '').join('');
}

/**
 * The session answers again after a cancel: `say <words>` streams <words>.
 * claude-agent-acp (quirk emptyTurnAfterCancel) then runs one prompt
 * behind: the first prompt after a cancel is answered at once, empty, and
 * each answer streams during the prompt after it (it may catch up, or not).
 * Three prompts: the first two answers must arrive whole and in order, the
 * third may be pending, nothing else may come.
 */
async function promptAfterCancel(recipe, client, seen, sessionId, words) {
  const from = seen.length;
  if (!recipe.quirks?.emptyTurnAfterCancel) {
    const r = await client.prompt({ sessionId, prompt: `say ${words}` });
    assert.equal(r.stopReason, 'end_turn');
    assert.equal(textOf(seen, sessionId, from).trim(), words);
    return;
  }
  const answers = [1, 2, 3].map((n) => `${words} ${n}.`);
  for (const a of answers)
    assert.equal((await client.prompt({ sessionId, prompt: `say ${a}` })).stopReason, 'end_turn');
  const whole = answers.join('');
  const text = () => textOf(seen, sessionId, from).trim();
  await until(
    () => text().startsWith(answers[0] + answers[1]),
    `the first two answers never came whole: ${JSON.stringify(text())}`,
  );
  assert.ok(whole.startsWith(text()), `out of order or extra: ${JSON.stringify(text())}`);
}

export function agentSuite(id) {
  const recipe = RECIPES[id];
  const uses = new Set(recipe.uses);

  const extras = [...uses]
    .filter((u) => u !== 'permission')
    .map((u) => `built-in ${u}, `)
    .join('');
  test(`${id}: one session — streamed text, permission allow and reject, ${extras}modes and config in the view; close() settles the turn first and leaves no process`, async (t) => {
    const policy = { kind: 'allow_once' };
    const asked = [];
    const h = await startAgent(t, id, {
      handlers: { 'session/request_permission': (params) => choose(policy.kind, asked)(params) },
    });
    const { client, seen, waitFor, wire, cwd, llm } = h;
    await client.initialize();
    const { sessionId, ...setup } = await client.newSession({ cwd });
    const view = client.session(sessionId, { setup, forward: true });

    await t.test('streamed text arrives whole and in order, in several chunks', async () => {
      const from = seen.length;
      const r = await client.prompt({ sessionId, prompt: `say ${TEXT}` });
      assert.equal(r.stopReason, 'end_turn');
      const chunks = seen
        .slice(from)
        .filter(
          (e) => e.kind === 'update' && e.update.sessionUpdate === 'agent_message_chunk' && e.update.content?.text,
        )
        .map((e) => e.update.content.text);
      assert.ok(chunks.length >= 2, `one chunk: ${JSON.stringify(chunks)}`);
      assert.equal(chunks.join('').trim(), TEXT);
      assert.equal(lastEntryText(view, 'agent').trim(), TEXT);
    });

    await t.test('text full of escapes folds in the view as it streamed', async () => {
      const from = seen.length;
      const r = await client.prompt({ sessionId, prompt: 'escapes' });
      assert.equal(r.stopReason, 'end_turn');
      const streamed = textOf(seen, sessionId, from);
      assert.equal(streamed.trim(), ESCAPED_TEXT);
      assert.equal(lastEntryText(view, 'agent'), streamed);
    });

    await t.test('permission allowed: the shell line runs, its effect is on disk', async () => {
      policy.kind = 'allow_once';
      asked.length = 0;
      const r = await client.prompt({ sessionId, prompt: 'run echo shell-ok > shell-made.txt' });
      assert.equal(r.stopReason, 'end_turn');
      assert.equal(asked.length, 1, 'asked once');
      assert.equal(asked[0].sessionId, sessionId);
      assert.equal(readFileSync(join(cwd, 'shell-made.txt'), 'utf8'), 'shell-ok\n');
      if (uses.has('terminal')) {
        // The agent ran it through a built-in terminal, as a whole shell line.
        const [create] = agentRequests(wire, 'terminal/create');
        assert.equal(create.params.command, 'echo shell-ok > shell-made.txt');
        assert.equal(create.params.args, undefined);
        assert.equal(create.reply.error, undefined, `terminal/create failed: ${JSON.stringify(create.reply.error)}`);
        assert.match(create.reply.result.terminalId, /\S/);
        assert.equal(client.openTerminals, 0, 'the agent released its terminal');
      }
    });

    await t.test('permission rejected: the shell line does not run, the turn ends', async () => {
      policy.kind = 'reject_once';
      asked.length = 0;
      const r = await client.prompt({ sessionId, prompt: 'run echo nope > rejected.txt' });
      // codex offers no "deny and go on": its reject aborts the turn.
      assert.equal(r.stopReason, recipe.quirks?.rejectCancelsTurn ? 'cancelled' : 'end_turn');
      assert.equal(asked.length, 1, 'asked once');
      assert.equal(existsSync(join(cwd, 'rejected.txt')), false, 'a rejected command ran');
    });

    if (uses.has('fs')) {
      await t.test('built-in fs: the agent writes and reads files through the host', async () => {
        policy.kind = 'allow_once';
        // gemini-cli can only overwrite through the host (quirk newFileViaFs).
        if (recipe.quirks?.newFileViaFs) writeFileSync(join(cwd, 'notes.txt'), 'old notes');
        const wrote = await client.prompt({ sessionId, prompt: 'write notes.txt hello notes' });
        assert.equal(wrote.stopReason, 'end_turn');
        const writes = agentRequests(wire, 'fs/write_text_file');
        assert.equal(writes.length, 1, 'no fs/write_text_file');
        assert.equal(writes[0].params.path, join(cwd, 'notes.txt'));
        assert.deepEqual(writes[0].reply.result, {});
        assert.equal(readFileSync(join(cwd, 'notes.txt'), 'utf8'), 'hello notes');
        if (recipe.quirks?.newFileViaFs) {
          // It read the old content through the host first.
          const [before] = agentRequests(wire, 'fs/read_text_file').filter(
            (r) => r.params.path === join(cwd, 'notes.txt'),
          );
          assert.deepEqual(before.reply.result, { content: 'old notes' });
        }

        writeFileSync(join(cwd, 'secret.txt'), 'the secret word is kumquat\n');
        const from = seen.length;
        const read = await client.prompt({ sessionId, prompt: 'read secret.txt' });
        assert.equal(read.stopReason, 'end_turn');
        const reads = agentRequests(wire, 'fs/read_text_file').filter((r) => r.params.path === join(cwd, 'secret.txt'));
        if (recipe.quirks?.readToolReadsDisk) assert.equal(reads.length, 0);
        else {
          assert.ok(reads.length >= 1, 'no fs/read_text_file of secret.txt');
          assert.match(reads.at(-1).reply.result.content, /kumquat/);
        }
        // What the host read reached the model and came back in the answer.
        assert.match(llm.calls.filter((c) => c.turnText === 'read secret.txt').at(-1).step.text, /kumquat/);
        assert.match(textOf(seen, sessionId, from), /kumquat/);
      });
    }

    if (recipe.quirks?.newFileViaFs) {
      await t.test('quirk newFileViaFs: a new file written through the host fails in the agent', async () => {
        policy.kind = 'allow_once';
        await client.prompt({ sessionId, prompt: 'write brand-new.txt fresh' });
        assert.equal(existsSync(join(cwd, 'brand-new.txt')), false);
        assert.match(
          llm.calls.filter((c) => c.turnText === 'write brand-new.txt fresh').at(-1).step.text,
          /Error checking existing file: .*does not exist/,
        );
      });
    }

    await t.test('modes and config options: the view shows what the host set', async (st) => {
      const modes = setup.modes?.availableModes ?? [];
      const options = (setup.configOptions ?? []).filter((o) => o.type === 'select' && (o.options?.length ?? 0) >= 2);
      assert.ok(modes.length >= 2 || options.length >= 1, 'the agent offers no modes and no config options');
      if (modes.length >= 2) {
        const target = modes.find((m) => m.id !== setup.modes.currentModeId);
        await client.setSessionMode({ sessionId, modeId: target.id });
        assert.equal(view.snapshot().modes.currentModeId, target.id, 'the view kept the old mode');
      } else st.diagnostic('no session modes');
      if (options.length >= 1) {
        // A setting other than the model if there is one (the fake model answers any).
        const option =
          options.find((o) => o.category !== 'model' && o.category !== 'mode') ??
          options.find((o) => o.category !== 'mode') ??
          options[0];
        const current =
          view.snapshot().config.configOptions?.find((o) => o.id === option.id)?.currentValue ?? option.currentValue;
        const value = option.options.find((v) => v.value !== current).value;
        const result = await client.setSessionConfigOption({ sessionId, configId: option.id, value });
        assert.equal(
          result.configOptions.find((o) => o.id === option.id).currentValue,
          value,
          'the agent did not take the value',
        );
        const shown = view.snapshot().config.configOptions.find((o) => o.id === option.id);
        assert.equal(shown.currentValue, value, 'the view kept the old value');
      } else st.diagnostic('no select config options');
    });

    await t.test('close() during a turn: the prompt settles before close() resolves; no process survives', async () => {
      const tree = processTree(client.pid);
      const from = seen.length;
      const order = [];
      const turn = client.prompt({ sessionId, prompt: 'slow' });
      turn.then(
        () => order.push('prompt settled'),
        () => order.push('prompt settled'),
      );
      await chunkWith(waitFor, seen, sessionId, 'more', from);
      const exit = await client.close();
      order.push('closed');
      assert.deepEqual(order, ['prompt settled', 'closed']);
      assert.equal(exit.reason, 'closed');
      await gone(tree);
    });

    await t.test('stderr events are one line each', () => {
      assert.ok(h.stderr.length > 0 || !recipe.quirks?.multiLineStderr, 'the agent wrote no stderr');
      for (const line of h.stderr)
        assert.doesNotMatch(line.replace(/\r?\n$/, ''), /\n/, `several lines in one event: ${JSON.stringify(line)}`);
    });
  });

  test(`${id}: a throwing permission handler, cancel mid-stream, cancel with a permission pending, abort — the session goes on`, async (t) => {
    let onAsk = () => {};
    let throwing = false;
    const h = await startAgent(t, id, {
      handlers: {
        // Never answers by itself: only cancel() settles it (or it throws).
        'session/request_permission': (params) => {
          onAsk(params);
          if (throwing) throw new Error('a bug in the host');
          return new Promise(() => {});
        },
      },
    });
    const { client, seen, waitFor, wire, cwd } = h;
    await client.initialize();
    // A session per step: one step's aftermath (a lagging agent) stays in its own.
    let sessionId;
    const fresh = async () => ({ sessionId } = await client.newSession({ cwd }));

    await t.test(
      'a permission handler that throws: answered cancelled, nothing runs, the session goes on',
      async () => {
        await fresh();
        throwing = true;
        const reported = new Promise((resolve) => client.once('handlerError', (err, where) => resolve({ err, where })));
        const r = await client.prompt({ sessionId, prompt: 'run echo bug > thrown.txt' });
        throwing = false;
        assert.equal(r.stopReason, recipe.quirks?.rejectCancelsTurn ? 'cancelled' : 'end_turn');
        const answer = wire
          .filter((x) => x.direction === 'send' && x.kind === 'response' && x.method === 'session/request_permission')
          .at(-1);
        assert.deepEqual(JSON.parse(answer.payload).result, { outcome: { outcome: 'cancelled' } });
        const { err, where } = await reported;
        assert.equal(err.message, 'a bug in the host');
        assert.match(where, /session\/request_permission/);
        assert.equal(existsSync(join(cwd, 'thrown.txt')), false, 'the command ran');
        const from = seen.length;
        assert.equal((await client.prompt({ sessionId, prompt: 'say still here' })).stopReason, 'end_turn');
        assert.equal(textOf(seen, sessionId, from).trim(), 'still here');
      },
    );

    await t.test('cancel mid-stream: the turn stops with stopReason cancelled', async () => {
      await fresh();
      const from = seen.length;
      const turn = client.prompt({ sessionId, prompt: 'slow' });
      await chunkWith(waitFor, seen, sessionId, 'more', from);
      await client.cancel(sessionId);
      assert.deepEqual((await turn).stopReason, 'cancelled');
      await promptAfterCancel(recipe, client, seen, sessionId, 'after the cancel');
    });

    await t.test('cancel with a permission pending: the question is answered cancelled, nothing runs', async () => {
      await fresh();
      const asked = new Promise((resolve) => (onAsk = resolve));
      const turn = client.prompt({ sessionId, prompt: 'run echo late > cancelled.txt' });
      await asked;
      assert.equal(await client.cancel(sessionId), 1, 'the pending permission was not answered');
      assert.equal((await turn).stopReason, 'cancelled');
      const answer = wire
        .filter((r) => r.direction === 'send' && r.kind === 'response' && r.method === 'session/request_permission')
        .at(-1);
      assert.deepEqual(JSON.parse(answer.payload).result, { outcome: { outcome: 'cancelled' } });
      assert.equal(existsSync(join(cwd, 'cancelled.txt')), false, 'the command ran after all');
      await promptAfterCancel(recipe, client, seen, sessionId, 'after the pending cancel');
    });

    await t.test('abort: the prompt rejects ERR_ACP_ABORTED and the agent is told to cancel', async () => {
      await fresh();
      const from = seen.length;
      const controller = new AbortController();
      const turn = client.prompt({ sessionId, prompt: 'slow' }, { signal: controller.signal });
      await chunkWith(waitFor, seen, sessionId, 'more', from);
      const cancelsBefore = wire.filter((r) => r.direction === 'send' && r.method === 'session/cancel').length;
      controller.abort();
      await assert.rejects(turn, { code: 'ERR_ACP_ABORTED' });
      await until(
        () => wire.filter((r) => r.direction === 'send' && r.method === 'session/cancel').length === cancelsBefore + 1,
        'no session/cancel sent',
      );
      // The agent still answers the aborted prompt (after its last updates of
      // that turn): wait for it, so they are not taken for the next turn's.
      const sent = wire
        .filter((r) => r.direction === 'send' && r.kind === 'request' && r.method === 'session/prompt')
        .at(-1);
      await until(
        () =>
          wire.some(
            (r) => r.direction === 'receive' && r.id === sent.id && (r.kind === 'response' || r.kind === 'error'),
          ),
        'the agent never answered the aborted prompt',
      );
      await promptAfterCancel(recipe, client, seen, sessionId, 'after the abort');
    });
    await client.close();
  });

  if (recipe.quirks?.rootSandboxFlag) {
    const root = process.getuid?.() === 0;
    test(`${id}: quirk rootSandboxFlag — as root, IS_SANDBOX=yes breaks session/new; the recipe's empty value works`, {
      skip: !root && 'only under root',
    }, async (t) => {
      const { client, cwd } = await startAgent(t, id, { extraEnv: { IS_SANDBOX: 'yes' } });
      await client.initialize();
      await assert.rejects(client.newSession({ cwd }), {
        code: 'ERR_ACP_RPC',
        rpcCode: -32603,
        data: { details: 'Query closed before response received' },
      });
      await client.close();
    });
  }

  if (recipe.quirks?.loadOwnSessionFails) {
    // gemini-cli resets the saved messages and reads them in a race of its
    // own: the load is refused (and the messages are gone) or it replays the
    // session. Either way the call settles as one of those two.
    test(`${id}: quirk loadOwnSessionFails — session/load of a session it saved is refused, or (when gemini's own race goes the other way) replays it`, async (t) => {
      const first = await startAgent(t, id);
      await first.client.initialize();
      const { sessionId } = await first.client.newSession({ cwd: first.cwd });
      await first.client.prompt({ sessionId, prompt: 'say remember the pelican' });
      await first.client.close();
      const second = await startAgent(t, id, { home: first.home, cwd: first.cwd, llm: first.llm });
      await second.client.initialize();
      const view = second.client.session(sessionId, { forward: true });
      const loaded = await second.client.loadSession({ sessionId, cwd: first.cwd }).then(
        () => true,
        (error) => {
          assert.equal(error.code, 'ERR_ACP_RPC', error.stack);
          assert.equal(error.rpcCode, -32603);
          assert.deepEqual(error.data, { details: 'No previous sessions found for this project.' });
          return false;
        },
      );
      if (loaded) assert.match(lastEntryText(view, 'user'), /say remember the pelican/);
      await second.client.close();
    });
  } else {
    test(`${id}: loadSession in a new process replays the session into a view`, async (t) => {
      const first = await startAgent(t, id);
      const init = await first.client.initialize();
      assert.equal(init.agentCapabilities?.loadSession, true);
      const { sessionId } = await first.client.newSession({ cwd: first.cwd });
      await first.client.prompt({ sessionId, prompt: 'say remember the pelican' });
      await first.client.close();

      const second = await startAgent(t, id, { home: first.home, cwd: first.cwd, llm: first.llm });
      await second.client.initialize();
      const view = second.client.session(sessionId, { forward: true }); // before loadSession: the replay folds into it
      await second.client.loadSession({ sessionId, cwd: first.cwd });
      assert.match(lastEntryText(view, 'user'), /say remember the pelican/);
      assert.equal(lastEntryText(view, 'agent').trim(), 'remember the pelican');
      // The loaded session carries its history into the next turn.
      const from = second.seen.length;
      await second.client.prompt({ sessionId, prompt: 'say and the next turn' });
      assert.equal(textOf(second.seen, sessionId, from).trim(), 'and the next turn');
      await second.client.close();
    });
  }
}
