import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { builtinSession, enc, linksMissing, tempTree } from './builtin-helpers.mjs';
import { mockClient, TIME_SCALE } from './helpers.mjs';

// Only against a hang: a broken teardown must fail the run, not stall it.
const GUARD = { timeout: 60_000 * TIME_SCALE };
const OUTSIDE = -32602;
const NOT_FOUND = -32002;

test('fs: capabilities follow what is switched on or handled', GUARD, async () => {
  const caps = async (options) => {
    const client = mockClient(options);
    const init = await client.initialize();
    await client.close();
    return init._meta.receivedClientCapabilities;
  };
  assert.deepEqual(await caps({ fs: true, terminals: true }), {
    fs: { readTextFile: true, writeTextFile: true },
    terminal: true,
  });
  assert.deepEqual((await caps({ fs: { readOnly: true } })).fs, { readTextFile: true, writeTextFile: false });
  assert.deepEqual(await caps({}), { fs: { readTextFile: false, writeTextFile: false }, terminal: false });
  // A host handler alone still advertises its method.
  const hosted = await caps({ fs: { readOnly: true }, handlers: { 'fs/write_text_file': () => ({}) } });
  assert.deepEqual(hosted.fs, { readTextFile: true, writeTextFile: true });
});

test('fs: bad options are a typed error, not a spawn', GUARD, () => {
  for (const fs of [{ maxFileBytes: -1 }, { roots: 'not-an-array' }, 'yes']) {
    assert.throws(() => mockClient({ fs }), { code: 'ERR_ACP_INVALID_ARGUMENT' }, JSON.stringify(fs));
  }
  assert.throws(() => mockClient({ terminals: { maxTerminals: 1.5 } }), { code: 'ERR_ACP_INVALID_ARGUMENT' });
});

test('fs: reads whole files and line/limit windows (1-based)', GUARD, async () => {
  const t = tempTree('read');
  writeFileSync(join(t.root, 'a.txt'), 'one\ntwo\nthree\nfour');
  writeFileSync(join(t.root, 'empty.txt'), '');
  writeFileSync(join(t.root, 'crlf.txt'), 'a\r\nb\r\n');
  const { client, run } = await builtinSession({ fs: true }, t.root);
  const read = async (path, line = '', limit = '') => await run(`read:${enc(path)}:${line}:${limit}`, 'read');
  const content = async (...a) => (await read(...a)).result.content;
  try {
    assert.equal(await content('a.txt'), 'one\ntwo\nthree\nfour');
    assert.equal(await content(join(t.root, 'a.txt')), 'one\ntwo\nthree\nfour');
    assert.equal(await content('a.txt', 1, 1), 'one\n');
    assert.equal(await content('a.txt', 2, 2), 'two\nthree\n');
    assert.equal(await content('a.txt', 3), 'three\nfour');
    assert.equal(await content('a.txt', 4, 100), 'four'); // the last line has no newline
    assert.equal(await content('a.txt', 5), ''); // past the end
    assert.equal(await content('a.txt', 1, 0), ''); // no lines asked
    assert.equal(await content('a.txt', 0, 1), 'one\n'); // line 0 is taken as 1
    assert.equal(await content('a.txt', '', 2), 'one\ntwo\n'); // limit alone
    assert.equal(await content('empty.txt'), '');
    assert.equal(await content('empty.txt', 1, 1), '');
    assert.equal(await content('crlf.txt', 2, 1), 'b\r\n');
    const missing = await read('nope.txt');
    assert.equal(missing.error.code, NOT_FOUND);
    assert.equal(missing.error.data.reason, 'notFound');
  } finally {
    await client.close();
    t.cleanup();
  }
});

test('fs: writes create parent directories and replace files atomically', GUARD, async () => {
  const t = tempTree('write');
  const { client, run } = await builtinSession({ fs: true }, t.root);
  try {
    const reply = await run(`write:${enc('deep/er/new.txt')}:${enc('héllo\nwörld\n')}`, 'write');
    assert.deepEqual(reply.result, {});
    assert.equal(readFileSync(join(t.root, 'deep/er/new.txt'), 'utf8'), 'héllo\nwörld\n');
    await run(`write:${enc(join(t.root, 'deep/er/new.txt'))}:${enc('replaced')}`, 'write');
    assert.equal(readFileSync(join(t.root, 'deep/er/new.txt'), 'utf8'), 'replaced');
    // Empty content is a file too; nothing but the targets is left behind.
    await run(`write:${enc('deep/empty.txt')}:`, 'write');
    assert.equal(readFileSync(join(t.root, 'deep/empty.txt'), 'utf8'), '');
    assert.deepEqual(readdirSync(join(t.root, 'deep')).sort(), ['empty.txt', 'er']);
    assert.deepEqual(readdirSync(join(t.root, 'deep/er')), ['new.txt']);
    // The agent reads back what it wrote.
    assert.equal((await run(`read:${enc('deep/er/new.txt')}`, 'read')).result.content, 'replaced');
  } finally {
    await client.close();
    t.cleanup();
  }
});

test('fs: traversal, paths elsewhere, symlink escapes and device files are refused', {
  ...GUARD,
  skip: linksMissing(),
}, async () => {
  const t = tempTree('escape');
  writeFileSync(join(t.outside, 'secret.txt'), 'secret');
  writeFileSync(join(t.root, 'ok.txt'), 'ok');
  symlinkSync(join(t.outside, 'secret.txt'), join(t.root, 'link-file'));
  symlinkSync(t.outside, join(t.root, 'link-dir'));
  symlinkSync('/dev/zero', join(t.root, 'zero'));
  symlinkSync(join(t.outside, 'not-yet.txt'), join(t.root, 'dangling'));
  symlinkSync('ok.txt', join(t.root, 'inside-link')); // stays inside: fine
  const { client, run } = await builtinSession({ fs: true }, t.root);
  try {
    const refused = [
      '../outside/secret.txt',
      '../outside/missing.txt',
      'sub/../../outside/secret.txt',
      join(t.outside, 'secret.txt'),
      '/etc/passwd',
      '/etc/no-such-file',
      'link-file',
      'link-dir/secret.txt',
      'link-dir/new.txt',
      'zero',
      '/dev/zero',
      'dangling',
      `${t.root}x/file`,
    ];
    for (const path of refused) {
      const r = await run(`read:${enc(path)}`, 'read');
      assert.equal(r.error?.code, OUTSIDE, `read ${path}: ${JSON.stringify(r)}`);
      assert.equal(r.error.data.reason, 'outsideRoots', path);
      const w = await run(`write:${enc(path)}:${enc('pwned')}`, 'write');
      assert.equal(w.error?.code, OUTSIDE, `write ${path}: ${JSON.stringify(w)}`);
    }
    // Nothing outside was touched or created.
    assert.equal(readFileSync(join(t.outside, 'secret.txt'), 'utf8'), 'secret');
    assert.deepEqual(readdirSync(t.outside), ['secret.txt']);
    assert.equal(existsSync(join(t.dir, 'rootx')), false);
    // A directory and a symlink inside the root are not files to read.
    mkdirSync(join(t.root, 'sub'));
    assert.equal((await run(`read:sub`, 'read')).error.data.reason, 'notAFile');
    assert.equal((await run(`read:inside-link`, 'read')).result.content, 'ok');
  } finally {
    await client.close();
    t.cleanup();
  }
});

test('fs: by default each session is confined to its own cwd', GUARD, async () => {
  const a = tempTree('sess-a');
  const b = tempTree('sess-b');
  writeFileSync(join(b.root, 'b.txt'), 'from b');
  const { client, run } = await builtinSession({ fs: true }, a.root);
  try {
    const other = await run(`read:${enc(join(b.root, 'b.txt'))}`, 'read');
    assert.equal(other.error.data.reason, 'outsideRoots');
    // The same client's session in b may read it.
    const { sessionId } = await client.newSession({ cwd: b.root });
    const updates = [];
    client.onSessionUpdate((p) => p.sessionId === sessionId && updates.push(p.update));
    await client.prompt({ sessionId, prompt: `read:b.txt` });
    assert.match(updates.at(-1).content.text, /"content":"from b"/);
    // A session the client never created has no cwd to confine to.
    const stranger = await run(`session:sess_unknown read:b.txt`, 'read');
    assert.equal(stranger.error.code, NOT_FOUND);
    assert.match(stranger.error.message, /unknown session sess_unknown/);
  } finally {
    await client.close();
    a.cleanup();
    b.cleanup();
  }
});

test("fs: a session's additionalDirectories are roots too", GUARD, async () => {
  const t = tempTree('additional');
  const lib = tempTree('additional-lib');
  writeFileSync(join(lib.root, 'shared.txt'), 'shared');
  const updates = [];
  const client = mockClient({ fs: true, onSessionUpdate: (p) => updates.push(p.update) });
  try {
    await client.initialize();
    const { sessionId } = await client.newSession({ cwd: t.root, additionalDirectories: [lib.root] });
    await client.prompt({
      sessionId,
      prompt: `read:${enc(join(lib.root, 'shared.txt'))} read:${enc(join(lib.outside, 'x'))}`,
    });
    const reads = updates.map((u) => u.content?.text).filter((x) => x?.startsWith('read='));
    assert.match(reads[0], /"content":"shared"/);
    assert.match(reads[1], /"reason":"outsideRoots"/);
  } finally {
    await client.close();
    t.cleanup();
    lib.cleanup();
  }
});

test('fs: explicit roots replace the session cwd', GUARD, async () => {
  const t = tempTree('roots');
  const extra = tempTree('roots-extra');
  writeFileSync(join(t.root, 'in-cwd.txt'), 'cwd');
  writeFileSync(join(extra.root, 'in-extra.txt'), 'extra');
  const { client, run } = await builtinSession({ fs: { roots: [extra.root, t.outside] } }, t.root);
  try {
    assert.equal((await run(`read:${enc(join(extra.root, 'in-extra.txt'))}`, 'read')).result.content, 'extra');
    await run(`write:${enc(join(t.outside, 'made.txt'))}:x`, 'write');
    assert.equal(readFileSync(join(t.outside, 'made.txt'), 'utf8'), 'x');
    // The session cwd is not a root any more; relative paths still start there.
    assert.equal((await run(`read:in-cwd.txt`, 'read')).error.data.reason, 'outsideRoots');
  } finally {
    await client.close();
    t.cleanup();
    extra.cleanup();
  }
});

test('fs: size cap and non-UTF-8 content are refused with their reason', GUARD, async () => {
  const t = tempTree('cap');
  writeFileSync(join(t.root, 'big.txt'), `${'x'.repeat(2000)}\nshort\n`);
  writeFileSync(join(t.root, 'latin1.txt'), Buffer.from([0x63, 0x61, 0x66, 0xe9]));
  const { client, run } = await builtinSession({ fs: { maxFileBytes: 1000 } }, t.root);
  try {
    const big = await run(`read:big.txt`, 'read');
    assert.equal(big.error.code, -32602);
    assert.equal(big.error.data.reason, 'tooLarge');
    // A window within the cap is fine even in a big file.
    assert.equal((await run(`read:big.txt:2:1`, 'read')).result.content, 'short\n');
    const write = await run(`write:w.txt:${'y'.repeat(1001)}`, 'write');
    assert.equal(write.error.data.reason, 'tooLarge');
    assert.equal(existsSync(join(t.root, 'w.txt')), false);
    assert.equal((await run(`read:latin1.txt`, 'read')).error.data.reason, 'notUtf8');
  } finally {
    await client.close();
    t.cleanup();
  }
});

test('fs: a host handler wins over the built-in, and disposing it hands back', GUARD, async () => {
  const t = tempTree('host');
  writeFileSync(join(t.root, 'a.txt'), 'on disk');
  const seen = [];
  const { client, run } = await builtinSession(
    { fs: true, handlers: { 'fs/read_text_file': (p) => (seen.push(p.path), { content: 'unsaved buffer' }) } },
    t.root,
  );
  try {
    assert.equal((await run(`read:a.txt`, 'read')).result.content, 'unsaved buffer');
    assert.deepEqual(seen, ['a.txt']);
    // Writes are still built in.
    await run(`write:b.txt:${enc('built-in')}`, 'write');
    assert.equal(readFileSync(join(t.root, 'b.txt'), 'utf8'), 'built-in');
    // A handler added later wins too; dropping it restores the built-in.
    const late = client.onRequest('fs/write_text_file', () => ({}));
    await run(`write:c.txt:x`, 'write');
    assert.equal(existsSync(join(t.root, 'c.txt')), false);
    late.dispose();
    await run(`write:c.txt:x`, 'write');
    assert.equal(readFileSync(join(t.root, 'c.txt'), 'utf8'), 'x');
  } finally {
    await client.close();
    t.cleanup();
  }
});

test('fs: readOnly leaves writes to the host (none here: method not found)', GUARD, async () => {
  const t = tempTree('ro');
  const { client, run } = await builtinSession({ fs: { readOnly: true } }, t.root);
  try {
    const w = await run(`write:a.txt:x`, 'write');
    assert.equal(w.error.code, -32601);
    assert.equal(existsSync(join(t.root, 'a.txt')), false);
  } finally {
    await client.close();
    t.cleanup();
  }
});
