// `acp-native chat` in a real terminal (tmux): what a user sees and types.
import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { argvOf, MOCK_AGENT } from './helpers.mjs';
import { Terminal, requireTmux } from './tmux.mjs';

const CLI = fileURLToPath(new URL('../cli/acp-native.mjs', import.meta.url));
const onWindows = process.platform === 'win32';
const shq = (s) => `'${String(s).replaceAll("'", "'\\''")}'`;

before(() => {
  if (!onWindows) requireTmux();
});

let tagSerial = 0;
/** A terminal running `acp-native chat` against the mock agent; the pane stays open after exit. */
function chatTerminal() {
  // Unknown flags are ignored by the mock; the tag finds its process later.
  const tag = `tag-${process.pid}-${++tagSerial}`;
  const command = [process.execPath, CLI, 'chat', '--', process.execPath, MOCK_AGENT, '--tag', tag].map(shq).join(' ');
  const term = new Terminal(`${command}; echo "[exit $?]"; sleep 600`);
  return { term, tag };
}

/** Command lines of live mock agent processes started with `--tag tag` (not the shell or tmux that mention it). */
function processesWith(tag) {
  if (existsSync('/proc/self/cmdline')) {
    const found = [];
    for (const pid of readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
      try {
        const argv = argvOf(pid);
        const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
        const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
        // `node MOCK_AGENT --tag tag` (argvOf: as the program sees it, under qemu-user too).
        const isAgent = argv[1] === MOCK_AGENT && argv[2] === '--tag' && argv[3] === tag;
        if (isAgent && state !== 'Z') found.push(argv.join(' '));
      } catch {
        // exited while we looked
      }
    }
    return found;
  }
  return execFileSync('ps', ['-axo', 'command'], { encoding: 'utf8' })
    .split('\n')
    .filter((l) => l.includes(`${MOCK_AGENT} --tag ${tag}`) && !l.includes(CLI));
}

async function waitUntilGone(tag, timeoutMs = 30_000) {
  const deadline = Date.now() + timeoutMs;
  while (processesWith(tag).length > 0) {
    if (Date.now() > deadline) assert.fail(`agent still running: ${processesWith(tag).join('\n')}`);
    await sleep(50);
  }
}

const skip = onWindows ? 'tmux does not exist on Windows' : false;

test('chat streams text, thoughts, tool calls and plans, and asks for permission and answers', { skip }, async (t) => {
  const { term } = chatTerminal();
  t.after(() => term.close());
  await term.waitFor(/Connected to mock-agent 1\.0\.0, session sess_1/);
  await term.waitFor(/^> /m);

  term.type('text:2 thought:2 tool plan say:all_done');
  const screen = await term.waitFor(/\[turn ended: end_turn\]/);
  assert.match(screen, /^chunk0 chunk1 $/m);
  assert.match(screen, /^thinking: thinking0 thinking1 $/m);
  assert.match(screen, /^▸ tool Read README\.md \[read\]$/m);
  assert.match(screen, /^ {2}↳ Read README\.md: completed # README$/m);
  assert.match(screen, /^Plan:\n {2}\[x\] Look around \(high\)\n {2}\[>\] Write the code \(medium\)$/m);
  assert.match(screen, /^all done$/m);

  let from = screen.length;
  term.type('permission');
  await term.waitFor(
    /Permission requested: Run `rm -rf build` \[execute\][\s\S]*1\) \[allow_once\] Allow once\n {2}2\) \[allow_always\] Always allow\n {2}3\) \[reject_once\] Reject\n {2}4\) \[reject_always\] Always reject\nChoose 1-4: $/m,
    { from },
  );
  term.type('9'); // not an option: asked again
  await term.waitFor(/Type a number from 1 to 4/, { from });
  term.type('2');
  let after = await term.waitFor(/\[turn ended: end_turn\]/, { from });
  assert.match(after.slice(from), /permission=.*"outcome":"selected","optionId":"allow_always"/);
  assert.match(after.slice(from), /↳ Run `rm -rf build`: completed/);

  from = after.length;
  term.type('ext:_agentao.cn/ask_user');
  await term.waitFor(/The agent asks: Proceed\?\nAnswer: $/m, { from });
  term.type('ship it');
  after = await term.waitFor(/\[turn ended: end_turn\]/, { from });
  assert.match(after.slice(from), /ext=.*"result":\{"outcome":"answered","text":"ship it"\}/);

  from = after.length;
  term.send('C-d');
  await term.waitFor(/\[exit 0\]/, { from });
});

test('Ctrl-C cancels the turn (also while a permission question is open); Ctrl-C twice exits and stops the agent', {
  skip,
}, async (t) => {
  const { term, tag } = chatTerminal();
  t.after(() => term.close());
  await term.waitFor(/^> /m);
  assert.equal(processesWith(tag).length, 1, 'the agent runs while chatting');

  term.type('say:waiting wait-cancel');
  let screen = await term.waitFor(/^waiting$/m);
  let from = screen.length;
  term.send('C-c');
  screen = await term.waitFor(/\[turn ended: cancelled\]\n> $/m, { from });
  assert.match(screen.slice(from), /\^C cancelling the turn/);

  from = screen.length;
  term.type('permission say:not_reached');
  await term.waitFor(/Choose 1-4: $/m, { from });
  term.send('C-c');
  screen = await term.waitFor(/\[turn ended: cancelled\]\n> $/m, { from });
  assert.match(screen.slice(from), /permission=.*"outcome":\{"outcome":"cancelled"\}/);
  assert.doesNotMatch(screen.slice(from), /not reached/);

  // A turn the agent never ends by itself: first Ctrl-C cancels, second exits.
  from = screen.length;
  term.type('say:stuck hang');
  await term.waitFor(/^stuck$/m, { from });
  term.send('C-c');
  await term.waitFor(/\^C cancelling the turn/, { from });
  term.send('C-c');
  screen = await term.waitFor(/\[exit 0\]/, { from });
  assert.doesNotMatch(screen.slice(from), /Error|at .*\.mjs:\d+/);
  await waitUntilGone(tag);
});

test('Ctrl-C at an idle prompt exits cleanly', { skip }, async (t) => {
  const { term, tag } = chatTerminal();
  t.after(() => term.close());
  await term.waitFor(/^> /m);
  term.send('C-c');
  await term.waitFor(/\[exit 0\]/);
  await waitUntilGone(tag);
});
