// The session store with real agent processes: what a client records is
// listed, searched, exported and deleted; a store file that is not ours is
// a typed error; a session whose agent is killed mid-turn is continued on a
// new process by resume, load or a fresh session, each entry once.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SessionStore } from '../index.mjs';
import { MOCK_AGENT, mockClient } from './helpers.mjs';

// Removed once every test of the file is done: a test's own after-hooks
// run in the order they were added, and Windows cannot remove a store
// file before the store that a later hook closes is closed.
const scratchDirs = [];
after(() => {
  for (const dir of scratchDirs) rmSync(dir, { recursive: true, force: true });
});

function scratch() {
  const dir = mkdtempSync(join(tmpdir(), 'acp-store-'));
  scratchDirs.push(dir);
  return dir;
}

/** The message texts of a view, by kind. */
function texts(view, kind) {
  return view.entries.filter((e) => e.kind === kind).map((e) => e.content.map((b) => b.text).join(''));
}

/** All agent text, joined (a live view merges turns without prompts between them). */
const said = (view) => texts(view, 'agent').join('|');

test('a recorded session is listed, searched, exported and deleted', async (t) => {
  const store = await SessionStore.open(join(scratch(), 'store'), { intervalMs: 10 });
  t.after(() => store.close());
  const client = mockClient({ store });
  await client.initialize();
  const { sessionId } = await client.newSession();
  await client.prompt({ sessionId, prompt: 'say:the_walrus_speaks' });
  await client.close();
  await store.flush();

  const [s] = await store.list();
  assert.equal(s.agentSessionId, sessionId);
  assert.equal(s.agent.name, 'mock-agent');
  assert.equal(s.agent.command, process.execPath);
  assert.equal(s.title, 'say:the_walrus_speaks');
  assert.equal(s.state, 'closed');
  assert.equal(s.capabilities.loadSession, true);

  const got = await store.get(s.id);
  assert.deepEqual(texts(got.view, 'agent'), ['the walrus speaks']);

  const found = await store.search('walrus');
  assert.equal(found.length, 1);
  assert.match(found[0].snippet, /\[walrus\]/);
  assert.deepEqual(await store.search('narwhal'), []);

  const exported = await store.export(s.id);
  assert.equal(exported.format, 'acp-native-session');
  assert.deepEqual(
    exported.session.journal.map((r) => r.kind),
    ['prompt', 'turn_end'],
  );
  assert.equal(exported.session.journal[1].data.stopReason, 'end_turn');

  await store.delete(s.id);
  assert.deepEqual(await store.list(), []);
  await assert.rejects(store.get(s.id), { code: 'ERR_ACP_STORE_NOT_FOUND' });
});

test('a read sees what was recorded before it, with no flush, right after the agent is killed', async (t) => {
  const store = await SessionStore.open(join(scratch(), 'store'), { intervalMs: 60_000 });
  t.after(() => store.close());
  const client = mockClient({ store });
  await client.initialize();
  const { sessionId } = await client.newSession();
  await client.prompt({ sessionId, prompt: 'say:recorded_just_now' });
  const [storedId] = Object.values(client.recordedSessions());
  client.kill();
  await client.closed;

  const [listed] = await store.list();
  assert.equal(listed?.id, storedId);
  assert.deepEqual(texts((await store.get(storedId)).view, 'agent'), ['recorded just now']);
  assert.equal((await store.search('recorded')).length, 1);
  assert.equal((await store.export(storedId)).session.id, storedId);
});

test('a store file that is not ours is a typed error, and left as it is', async () => {
  const dir = scratch();
  writeFileSync(join(dir, 'sessions.sqlite3'), 'my notes, not a database\n'.repeat(100));
  await assert.rejects(SessionStore.open(dir), { code: 'ERR_ACP_STORE_CORRUPT' });
  assert.throws(() => mockClient({ store: { dir } }), { code: 'ERR_ACP_INVALID_ARGUMENT' });
});

/**
 * Record a session on a mock agent, run a turn, start a second that never
 * ends, kill -9 the agent in it; resolves to what a new process needs.
 */
async function killedMidTurn(t, agentArgs) {
  const root = scratch();
  const store = await SessionStore.open(join(root, 'store'), { intervalMs: 10 });
  t.after(() => store.close());
  const args = [MOCK_AGENT, '--sessions-dir', root, ...agentArgs];
  const client = mockClient({ store, args });
  await client.initialize();
  const { sessionId } = await client.newSession();
  await client.prompt({ sessionId, prompt: 'say:before' });
  const turn = client.prompt({ sessionId, prompt: 'say:partial hang' });
  const [storedId] = Object.values(client.recordedSessions());
  // Wait until the store has the partial turn (the writer copies it).
  for (;;) {
    await store.flush();
    const s = await store.get(storedId);
    if (said(s.view).includes('partial')) break;
    await new Promise((r) => setTimeout(r, 10));
  }
  process.kill(client.pid, 'SIGKILL');
  await assert.rejects(turn, { code: 'ERR_ACP_CLOSED' });
  await client.exited;
  await store.flush();
  return { store, storedId, args };
}

for (const [how, agentArgs] of [
  ['resume', ['--resume']],
  ['load', []],
  ['fresh', ['--no-load']],
]) {
  test(`an agent killed mid-turn is continued by ${how}, each entry once, the cut turn marked`, async (t) => {
    const { store, storedId, args } = await killedMidTurn(t, agentArgs);
    const events = [];
    const {
      client,
      sessionId,
      how: got,
      view,
    } = await store.resume(storedId, {
      command: process.execPath,
      args,
    });
    t.after(() => client.kill());
    assert.equal(got, how);
    client.on('recovered', (e) => events.push(e.how)); // (already emitted: nothing more)
    const state = view.snapshot();
    // Each entry once: with load, the replay keeps turns apart (prompts between).
    assert.equal(said(state), how === 'load' ? 'before|partial' : 'beforepartial');
    const notice = state.entries.find((e) => e.kind === 'notice');
    assert.equal(notice?.notice.title, 'Turn interrupted');
    if (how === 'load') assert.deepEqual(texts(state, 'user'), ['say:before', 'say:partial hang']);

    // The session goes on, recorded under the same stored id.
    await client.prompt({ sessionId, prompt: 'say:after' });
    const now = how === 'load' ? 'before|partial' : 'beforepartial';
    assert.equal(said(view.snapshot()).replace('|after', 'after'), `${now}after`);
    await store.flush();
    const s = await store.get(storedId);
    assert.equal(s.agentSessionId, sessionId);
    assert.equal(said(s.view), said(view.snapshot()), 'the store has the recovered view');
    const exported = await store.export(storedId);
    const recovered = exported.session.journal.find((r) => r.kind === 'recovered');
    assert.equal(recovered.data.how, how);
    assert.deepEqual(events, []);
    assert.equal((await store.list()).length, 1);
  });
}

test('recovery is one sequence of events: recovering, then recovered or recoveryFailed', async (t) => {
  const { store, storedId, args } = await killedMidTurn(t, ['--no-load']);
  const client = mockClient({ store, args });
  t.after(() => client.kill());
  await client.initialize();
  const events = [];
  client.on('recovering', (e) => events.push(['recovering', e.storedId]));
  client.on('recovered', (e) => events.push(['recovered', e.how]));
  client.on('recoveryFailed', (e) => events.push(['recoveryFailed', e.error.code]));
  await client.recover(storedId);
  await assert.rejects(client.recover('s_missing'), { code: 'ERR_ACP_STORE_NOT_FOUND' });
  assert.deepEqual(events, [
    ['recovering', storedId],
    ['recovered', 'fresh'],
    ['recovering', 's_missing'],
    ['recoveryFailed', 'ERR_ACP_STORE_NOT_FOUND'],
  ]);
});

test('a throwing recovery listener neither stops the others nor loses the event, nor the recovery', async (t) => {
  const { store, storedId, args } = await killedMidTurn(t, ['--no-load']);
  const client = mockClient({ store, args });
  t.after(() => client.kill());
  await client.initialize();
  const events = [];
  const faults = [];
  client.on('handlerError', (err, where) => faults.push([err.message, where]));
  for (const name of ['recovering', 'recovered', 'recoveryFailed']) {
    client.on(name, () => {
      throw new Error(`${name} listener failed`);
    });
    client.on(name, (e) => events.push([name, e.how ?? e.error?.code ?? e.storedId]));
  }
  const recovery = await client.recover(storedId);
  assert.equal(recovery.how, 'fresh', 'the recovery itself succeeded');
  await assert.rejects(client.recover('s_missing'), { code: 'ERR_ACP_STORE_NOT_FOUND' });
  assert.deepEqual(events, [
    ['recovering', storedId],
    ['recovered', 'fresh'],
    ['recovering', 's_missing'],
    ['recoveryFailed', 'ERR_ACP_STORE_NOT_FOUND'],
  ]);
  assert.deepEqual(faults, [
    ['recovering listener failed', 'recovering listener'],
    ['recovered listener failed', 'recovered listener'],
    ['recovering listener failed', 'recovering listener'],
    ['recoveryFailed listener failed', 'recoveryFailed listener'],
  ]);
});

test('one session list over the agent and the store: each entry says where it is', async (t) => {
  const root = scratch();
  const other = scratch();
  const store = await SessionStore.open(join(root, 'store'), { intervalMs: 10 });
  t.after(() => store.close());
  const connect = async (opts, dir) => {
    const c = mockClient({ ...opts, args: [MOCK_AGENT, '--sessions-dir', dir, '--resume'] });
    t.after(() => c.kill());
    await c.initialize();
    return c;
  };
  const a = await connect({ store }, root);
  const both = (await a.newSession()).sessionId;
  const b = await connect({}, root);
  const nativeOnly = (await b.newSession()).sessionId;
  const c = await connect({ store }, other);
  const storedOnly = (await c.newSession()).sessionId;
  await store.flush();

  const where = Object.fromEntries((await a.sessions()).map((s) => [s.sessionId, [s.native, s.stored]]));
  assert.deepEqual(where, { [both]: [true, true], [nativeOnly]: [true, false], [storedOnly]: [false, true] });

  // delete removes both: the agent's and the stored copy.
  await a.deleteSession({ sessionId: both });
  const after = (await a.sessions()).map((s) => s.sessionId).sort();
  assert.deepEqual(after, [nativeOnly, storedOnly].sort());
});

test('fork: native when the agent has it, else emulated from the store (flagged)', async (t) => {
  const root = scratch();
  const store = await SessionStore.open(join(root, 'store'), { intervalMs: 10 });
  t.after(() => store.close());
  for (const [flags, emulated] of [
    [['--resume'], false],
    [['--no-load'], true],
  ]) {
    const client = mockClient({ store, args: [MOCK_AGENT, '--sessions-dir', root, ...flags] });
    t.after(() => client.kill());
    await client.initialize();
    const { sessionId } = await client.newSession();
    await client.prompt({ sessionId, prompt: 'say:original_words' });
    const fork = await client.forkSession({ sessionId });
    assert.equal(fork.emulated, emulated);
    assert.notEqual(fork.sessionId, sessionId);
    await client.prompt({ sessionId: fork.sessionId, prompt: 'say:forked_words' });
    await store.flush();
    const stored = await store.get(fork.storedId);
    assert.equal(stored.forkedFrom, client.recordedSessions()[sessionId]);
    assert.equal(said(stored.view), 'original words|forked words'); // one entry per turn
    // The original is untouched.
    assert.equal(said((await store.get(client.recordedSessions()[sessionId])).view), 'original words');
  }
});

test('a full disk: flush rejects ERR_ACP_STORE_FULL, what was committed stays', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'acp-store-full-'));
  const { spawnSync } = await import('node:child_process');
  const mounted =
    process.platform === 'linux' && spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'tmpfs', dir]).status === 0;
  if (!mounted) {
    rmSync(dir, { recursive: true, force: true });
    return t.skip('cannot mount a 1 MiB tmpfs here (needs root on Linux)');
  }
  const store = await SessionStore.open(dir, { intervalMs: 10 });
  const client = mockClient({ store });
  // One hook, in order: the agent, the store, the disk, the directory.
  t.after(async () => {
    client.kill();
    await client.closed;
    await store.close().catch(() => {});
    spawnSync('umount', ['-l', dir]);
    rmSync(dir, { recursive: true, force: true });
  });
  await client.initialize();
  const { sessionId } = await client.newSession();
  await client.prompt({ sessionId, prompt: 'say:committed_first' });
  await store.flush();
  const [storedId] = Object.values(client.recordedSessions());
  // 64 KiB chunks until the 1 MiB disk is full.
  let error;
  for (let i = 0; i < 40 && !error; i++) {
    await client.prompt({ sessionId, prompt: 'big:65536' });
    error = await store.flush().then(
      () => undefined,
      (e) => e,
    );
  }
  assert.equal(error?.code, 'ERR_ACP_STORE_FULL');
  assert.equal(store.stats().lastError.code, 'ERR_ACP_STORE_FULL');
  const s = await store.get(storedId);
  assert.match(said(s.view), /^committed first/);
});
