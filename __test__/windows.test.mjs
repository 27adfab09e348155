// Windows behaviour users meet (docs/platforms.md): an agent that is an
// npm `.cmd` shim found through PATH and PATHEXT, arguments that cmd.exe
// would read as syntax, the shim → node → grandchild tree ending with
// the client and with the host, the built-in fs confined under Windows
// path rules, and built-in terminals. Run here under Wine by
// `npm run test:windows`; on a real Windows machine by the release workflow.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { alive, MOCK_AGENT, TIME_SCALE } from './helpers.mjs';
import { builtinSession, enc, linksMissing, tempTree, termArg } from './builtin-helpers.mjs';
import { AcpClient } from '../index.mjs';

const WINDOWS = {
  skip: process.platform !== 'win32' && 'Windows only (here: npm run test:windows, under Wine)',
  timeout: 120_000 * TIME_SCALE,
};
const HOST = fileURLToPath(new URL('./fixtures/windows-host.mjs', import.meta.url));

/** Under Wine (npm run test:windows) rather than on a Windows machine. */
export const UNDER_WINE =
  process.platform === 'win32' && existsSync(join(process.env.SystemRoot ?? 'C:\\windows', 'system32', 'winecfg.exe'));

/** The body of a `.cmd` shim for a package bin (`script`), as package managers write them. */
const SHIMS = {
  // npm 7 and later (cmd-shim 4+): `goto` to a missing label fails over to `||`.
  npm: (script) => [
    '@ECHO off',
    'GOTO start',
    ':find_dp0',
    'SET dp0=%~dp0',
    'EXIT /b',
    ':start',
    'SETLOCAL',
    'CALL :find_dp0',
    '',
    'IF EXIST "%dp0%\\node.exe" (',
    '  SET "_prog=%dp0%\\node.exe"',
    ') ELSE (',
    '  SET "_prog=node"',
    '  SET PATHEXT=%PATHEXT:;.JS;=;%',
    ')',
    '',
    `endLocal & goto #_undefined_# 2>NUL || title %COMSPEC% & "%_prog%"  "${script}" %*`,
  ],
  // pnpm (@zkochan/cmd-shim) and npm before 7.
  pnpm: (script) => [
    '@SETLOCAL',
    '@IF EXIST "%~dp0\\node.exe" (',
    `  "%~dp0\\node.exe"  "${script}" %*`,
    ') ELSE (',
    '  @SET PATHEXT=%PATHEXT:;.JS;=;%',
    `  node  "${script}" %*`,
    ')',
  ],
};

/** Wine 8's cmd.exe ends the batch at a `goto` to a missing label instead of failing over to `||`. */
const shimSkip = (style) =>
  UNDER_WINE &&
  style === 'npm' &&
  "Wine 8's cmd.exe ends a batch at `goto` to a missing label, which npm's shim relies on failing (runs on real Windows)";

/**
 * A directory (with a space in its name) holding `<name>.cmd`, a package
 * manager's shim running the mock agent with `node` from PATH.
 */
function npmShim(style = 'pnpm', name = 'acp-mock-agent') {
  const dir = mkdtempSync(join(tmpdir(), 'acp shim '));
  writeFileSync(join(dir, `${name}.cmd`), [...SHIMS[style](MOCK_AGENT), ''].join('\r\n'));
  // The agent finds `node` on PATH, as a user's shim does.
  const path = `${dir};${join(process.execPath, '..')};${process.env.PATH ?? ''}`;
  return {
    dir,
    name,
    env: { PATH: path },
    cleanup: () => rmSync(dir, { recursive: true, force: true, maxRetries: 5 }),
  };
}

/** Every character cmd.exe treats as syntax, alone and combined. */
const HOSTILE_ARGS = [
  'plain',
  'with space',
  '',
  'quote"inside',
  '"quoted"',
  'a&b',
  'a|b',
  'a^b',
  '!PATH!',
  '<in',
  '>out',
  '(paren)',
  'semi;colon,comma=eq',
  'tab\there',
  'trailing\\',
  'back\\"slash',
  '\\\\"',
  '" & echo INJECTED & "',
  '^& echo INJECTED',
  'é中😀',
  '> injected.txt',
  '& echo x > injected2.txt',
];

/** `%` starts a variable for cmd.exe: Rust's std breaks each one up with an empty `%cd:~,%`. */
const PERCENT_ARGS = ['%PATH%', '%OS', '100%', '%%', '%COMSPEC% /c echo INJECTED', '"%OS%" & echo INJECTED'];
const percentSkip =
  UNDER_WINE &&
  "Wine 8's cmd.exe does not honour the empty `%cd:~,%` substring Rust's std puts after each `%` (it expands %VAR%); runs on real Windows";

for (const style of Object.keys(SHIMS)) {
  for (const [what, args, skip] of [
    ['spaces, quotes, &, |, ^, !, <, >', HOSTILE_ARGS, false],
    ['%', PERCENT_ARGS, percentSkip],
  ]) {
    test(`an ${style} .cmd shim is found through PATH and PATHEXT and gets arguments with ${what} verbatim`, {
      ...WINDOWS,
      skip: WINDOWS.skip || shimSkip(style) || skip,
    }, async (t) => {
      const shim = npmShim(style);
      t.after(shim.cleanup);
      const cwd = mkdtempSync(join(tmpdir(), 'acp-cwd-'));
      t.after(() => rmSync(cwd, { recursive: true, force: true }));
      const client = new AcpClient({ command: shim.name, args, env: shim.env, cwd });
      const init = await client.initialize();
      assert.deepEqual(init._meta.argv, args, 'what the agent received');
      assert.notEqual(init._meta.pid, client.pid, 'the agent runs under the shim (cmd.exe)');
      await client.close();
      assert.equal(
        existsSync(join(cwd, 'injected.txt')) || existsSync(join(cwd, 'injected2.txt')),
        false,
        'cmd.exe ran a redirection',
      );
    });
  }
}

test(
  'an argument no quoting can carry through cmd.exe is refused: ERR_ACP_SPAWN, errno EINVAL, naming it',
  WINDOWS,
  async (t) => {
    const shim = npmShim();
    t.after(shim.cleanup);
    for (const bad of ['line\nbreak', 'carriage\rreturn', 'x\r\n& echo INJECTED']) {
      assert.throws(
        () => new AcpClient({ command: shim.name, args: ['fine', bad], env: shim.env }),
        (err) => {
          assert.equal(err.code, 'ERR_ACP_SPAWN');
          assert.equal(err.errno, 'EINVAL');
          assert.match(err.message, /argument 2 holds a line break/);
          assert.match(err.message, /acp-mock-agent\.cmd/);
          return true;
        },
      );
    }
    // The same shim named with its extension, and a .bat: the same refusal.
    assert.throws(() => new AcpClient({ command: join(shim.dir, `${shim.name}.cmd`), args: ['a\nb'], env: shim.env }), {
      errno: 'EINVAL',
    });
    // An .exe gets the line break intact (no cmd.exe in between).
    const client = new AcpClient({ command: process.execPath, args: [MOCK_AGENT, 'a\nb'] });
    assert.deepEqual((await client.initialize())._meta.argv, ['a\nb']);
    await client.close();
  },
);

/** Polls until none of `pids` is alive; the survivors otherwise. */
async function survivors(pids, ms = 15_000 * TIME_SCALE) {
  const end = Date.now() + ms;
  let left = pids;
  while (Date.now() < end) {
    left = pids.filter((p) => alive(p));
    if (!left.length) return [];
    await sleep(50);
  }
  return left;
}

/** Client on the shim with a grandchild: pids of cmd.exe (the shim), the agent and the grandchild. */
async function shimTree(shim) {
  const client = new AcpClient({
    command: shim.name,
    args: ['--grandchild', '--ignore-eof'],
    env: shim.env,
    closeGraceMs: 200,
    termGraceMs: 200,
  });
  const init = await client.initialize();
  const pids = [client.pid, init._meta.pid, init._meta.grandchild];
  assert.equal(
    pids.every((p) => Number.isInteger(p) && alive(p)),
    true,
    `not all running: ${pids}`,
  );
  return { client, pids };
}

test('close() ends the whole tree: shim, agent, grandchild', WINDOWS, async (t) => {
  const shim = npmShim();
  t.after(shim.cleanup);
  const { client, pids } = await shimTree(shim);
  const exit = await client.close();
  assert.equal(exit.reason, 'closed');
  assert.deepEqual(await survivors(pids), []);
});

test('kill() ends the whole tree: shim, agent, grandchild', WINDOWS, async (t) => {
  const shim = npmShim();
  t.after(shim.cleanup);
  const { client, pids } = await shimTree(shim);
  client.kill();
  assert.deepEqual(await survivors(pids), []);
});

for (const [mode, how] of [
  ['exit', 'process.exit()'],
  ['killed', 'being killed (TerminateProcess)'],
]) {
  test(`the whole tree ends with the host on ${how}`, WINDOWS, async (t) => {
    const shim = npmShim();
    t.after(shim.cleanup);
    const out = join(shim.dir, 'pids.json');
    const host = spawn(process.execPath, [HOST, shim.name, out], {
      env: { ...process.env, ...shim.env },
      stdio: 'ignore',
    });
    const exited = new Promise((resolve) => host.on('exit', (code, signal) => resolve({ code, signal })));
    let pids;
    for (let i = 0; i < 600 && !pids; i++) {
      if (existsSync(out)) pids = JSON.parse(readFileSync(out, 'utf8'));
      else await sleep(50);
    }
    assert.ok(pids, 'the host wrote no pids');
    if (mode === 'killed') host.kill('SIGKILL');
    else writeFileSync(`${out}.go`, 'exit');
    await exited;
    assert.deepEqual(await survivors(pids), []);
  });
}

// ---- built-in fs confinement under Windows path rules ----

/** A path's 8.3 short form from `cmd /c for … %~sI`, or null where there is none. */
function shortName(path) {
  const out = execFileSync('cmd', ['/d', '/c', `for %I in ("${path}") do @echo %~sI`], { encoding: 'utf8' }).trim();
  // Wine's cmd answers with a mangled path that does not exist.
  return out && out.toLowerCase() !== path.toLowerCase() && existsSync(out) ? out : null;
}

test(
  'fs: Windows paths that lead outside the root, or to streams and devices, are refused; nothing escapes',
  WINDOWS,
  async (t) => {
    const tree = tempTree('win-fs');
    t.after(tree.cleanup);
    writeFileSync(join(tree.outside, 'secret.txt'), 'secret');
    writeFileSync(join(tree.root, 'ok.txt'), 'ok');
    mkdirSync(join(tree.root, 'sub'));
    const { client, run } = await builtinSession({ fs: true }, tree.root);
    t.after(() => client.close());
    const secret = join(tree.outside, 'secret.txt');
    const drive = secret.slice(0, 2);
    const refused = {
      '.. with either slash': [
        '..\\outside\\secret.txt',
        '../outside/secret.txt',
        'sub\\..\\..\\outside\\secret.txt',
        'sub/..\\../outside/secret.txt',
        '..\\outside\\new.txt',
      ],
      'drive letters and case': [
        secret,
        secret.toLowerCase(),
        secret.toUpperCase(),
        secret.replaceAll('\\', '/'),
        `${drive}secret.txt`,
        `${drive}..\\outside\\secret.txt`,
        'Z:\\etc\\passwd',
        'D:\\secret.txt',
        `${tree.root}x\\file`,
      ],
      '\\\\?\\ and UNC prefixes': [
        `\\\\?\\${secret}`,
        `//?/${secret}`,
        `\\\\?\\${tree.root}\\..\\outside\\secret.txt`,
        `\\\\.\\${secret}`,
        `\\\\localhost\\${drive[0]}$${secret.slice(2)}`,
        `\\\\127.0.0.1\\${drive[0].toLowerCase()}$${secret.slice(2)}`,
        `\\\\?\\UNC\\localhost\\${drive[0]}$${secret.slice(2)}`,
        '\\\\server\\share\\secret.txt',
      ],
      'alternate data streams': [
        'ok.txt:hidden',
        'ok.txt::$DATA',
        'ok.txt:hidden:$DATA',
        '..:x',
        'sub\\..:x',
        `${tree.outside}:x`,
      ],
      'reserved names': [
        'CON',
        'nul',
        'COM1',
        'com9.log',
        'LPT1',
        'AUX.txt',
        'sub\\NUL',
        'PRN .txt',
        'CONIN$',
        'CONOUT$',
        '\\\\.\\NUL',
        '\\\\.\\PhysicalDrive0',
      ],
      'trailing dots and spaces': [
        '..\\outside\\secret.txt.',
        '..\\outside\\secret.txt ',
        'new.txt.',
        'new.txt ',
        'ok.txt...',
        'sub.\\f.txt',
      ],
    };
    for (const [group, paths] of Object.entries(refused)) {
      for (const path of paths) {
        const r = await run(`read:${enc(path)}`, 'read');
        assert.equal(r.error?.code, -32602, `${group}: read ${path}: ${JSON.stringify(r)}`);
        const w = await run(`write:${enc(path)}:${enc('pwned')}`, 'write');
        assert.equal(w.error?.code, -32602, `${group}: write ${path}: ${JSON.stringify(w)}`);
      }
    }
    assert.equal(readFileSync(secret, 'utf8'), 'secret');
    assert.deepEqual(readdirSync(tree.outside), ['secret.txt'], 'nothing written outside');
    assert.deepEqual(
      readdirSync(tree.root).sort(),
      ['ok.txt', 'sub'],
      'no stream, device or dotted name written inside',
    );
    assert.equal(readFileSync(join(tree.root, 'ok.txt'), 'utf8'), 'ok');

    // The same file named every Windows way still reads.
    const ok = join(tree.root, 'ok.txt');
    for (const path of [
      'ok.txt',
      'OK.TXT',
      ok,
      ok.toLowerCase(),
      ok.replaceAll('\\', '/'),
      `\\\\?\\${ok}`,
      'sub\\..\\ok.txt',
      'sub/../ok.txt',
    ]) {
      const r = await run(`read:${enc(path)}`, 'read');
      assert.equal(r.result?.content, 'ok', `read ${path}: ${JSON.stringify(r)}`);
    }

    await t.test('8.3 short names', async (st) => {
      const short = shortName(tree.outside);
      if (!short) return st.skip('no 8.3 short name for the path here (Wine gives none)');
      assert.equal((await run(`read:${enc(join(short, 'secret.txt'))}`, 'read')).error?.code, -32602);
      const shortRoot = shortName(tree.root);
      assert.equal((await run(`read:${enc(join(shortRoot, 'ok.txt'))}`, 'read')).result?.content, 'ok');
    });
    for (const type of ['file', 'dir', 'junction']) {
      await t.test(`${type} links pointing out`, async (st) => {
        const why = linksMissing(type);
        if (why) return st.skip(why);
        const link = join(tree.root, `link-${type}`);
        symlinkSync(type === 'file' ? secret : tree.outside, link, type);
        const through = type === 'file' ? `link-${type}` : `link-${type}\\secret.txt`;
        assert.equal((await run(`read:${enc(through)}`, 'read')).error?.code, -32602);
        assert.equal((await run(`write:${enc(through)}:${enc('pwned')}`, 'write')).error?.code, -32602);
        assert.equal(readFileSync(secret, 'utf8'), 'secret');
      });
    }
  },
);

// ---- built-in terminals ----

/** The texts of every `kind=` report, parsed, in order. */
function allReported(updates, kind) {
  return updates
    .filter((u) => u.sessionUpdate === 'agent_message_chunk' && u.content.text.startsWith(`${kind}=`))
    .map((u) => JSON.parse(u.content.text.slice(kind.length + 1)));
}

test(
  'terminals: CRLF output, stderr, non-UTF-8 bytes, exit codes, cmd.exe, kill and release of the tree',
  WINDOWS,
  async (t) => {
    const tree = tempTree('win-term');
    t.after(tree.cleanup);
    const { client, run, updates } = await builtinSession({ terminals: true }, tree.root);
    t.after(() => client.close());
    const last = (kind) => allReported(updates, kind).at(-1).result;
    const node = (script) => termArg({ command: process.execPath, args: ['-e', script] });

    // stdout and stderr share the output (two pipes on Windows: their order between them is not kept).
    await run(
      `term:${node("process.stdout.write('out\\r\\nline2\\r\\n'); process.stderr.write('err\\r\\n'); process.exitCode = 3")} term-wait term-output term-release`,
    );
    assert.deepEqual(last('wait'), { exitCode: 3, signal: null });
    const { output } = last('output');
    assert.ok(
      output.includes('out\r\nline2\r\n') &&
        output.includes('err\r\n') &&
        output.length === 'out\r\nline2\r\nerr\r\n'.length,
      JSON.stringify(output),
    );

    // Bytes that are not UTF-8 (a cp1252 "café") become U+FFFD; the CRLF stays.
    await run(
      `term:${node('process.stdout.write(Buffer.from([0x63, 0x61, 0x66, 0xe9, 0x0d, 0x0a]))')} term-wait term-output term-release`,
    );
    assert.equal(last('output').output, 'caf\uFFFD\r\n');

    // cmd.exe found by name, its builtins, and an exit code above 255.
    await run(
      `term:${termArg({ command: 'cmd', args: ['/d', '/c', 'echo hello& exit /b 300'] })} term-wait term-output term-release`,
    );
    assert.deepEqual(last('wait'), { exitCode: 300, signal: null });
    assert.equal(last('output').output.replace(/ +\r\n/g, '\r\n'), 'hello\r\n');

    // kill: the command and what it started end, reported as SIGKILL.
    const spawner =
      "const c = require('child_process').spawn(process.execPath, ['-e', 'setInterval(() => {}, 1e9)'], { stdio: 'ignore' }); console.log('child=' + c.pid); setInterval(() => {}, 1e9)";
    await run(`term:${node(spawner)} term-until:child= term-output`);
    const grandchild = Number(/child=(\d+)/.exec(last('output').output)[1]);
    assert.equal(alive(grandchild), true);
    await run('term-kill term-wait');
    assert.deepEqual(last('wait'), { exitCode: null, signal: 'SIGKILL' });
    assert.deepEqual(await survivors([grandchild]), []);
    await run('term-release');

    // release while running: the same.
    await run(`term:${node(spawner)} term-until:child= term-output`);
    const second = Number(/child=(\d+)/.exec(last('output').output)[1]);
    await run('term-release');
    assert.deepEqual(await survivors([second]), []);
  },
);
