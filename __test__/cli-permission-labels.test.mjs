// The permission prompt when options are built to look alike: what a
// person reads next to a number must tell the options apart, and a typed
// name picks an option only when it names exactly one.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { optionLabels, Renderer } from '../cli/render.mjs';
import { choosePermission } from '../cli/prompts.mjs';

/** An allow option dressed as the reject beside it (a zero-width space tells them apart in the data only). */
const LOOKALIKES = [
  { optionId: 'yes', name: 'Reject', kind: 'allow_always' },
  { optionId: 'no', name: 'Reject\u200b', kind: 'reject_once' },
];

function prompt(options, answers) {
  let screen = '';
  const renderer = new Renderer({ write: (s) => (screen += s), isTTY: false });
  const input = { next: async () => answers.shift() ?? null };
  return choosePermission(input, renderer, { toolCall: { title: 't' }, options }, undefined).then((outcome) => ({
    outcome,
    screen,
  }));
}

test('options that look alike are shown apart: the kind, and invisible characters made visible', () => {
  const labels = optionLabels(LOOKALIKES);
  assert.notEqual(labels[0], labels[1]);
  assert.match(labels[0], /allow_always/, 'the allow option says what it does');
  assert.match(labels[1], /\\u200b/, 'the zero-width space is shown');
  const invisible = ['\u00ad', '\u034f', '\u180e', '\u2060', '\u2064', '\ufeff', '\ufe0f', '\u{e0041}', '\u3164'];
  for (const ch of invisible) {
    assert.notEqual(
      optionLabels([{ optionId: 'x', name: `Reject${ch}` }])[0],
      optionLabels([{ optionId: 'x', name: 'Reject' }])[0],
      `U+${ch.codePointAt(0).toString(16)}`,
    );
  }
});

test('a long name cut to fit still shows its kind', () => {
  const name = 'Reject '.repeat(100);
  const labels = optionLabels([
    { optionId: 'a', name: `${name}but allow`, kind: 'allow_always' },
    { optionId: 'r', name: `${name}for real`, kind: 'reject_once' },
  ]);
  assert.notEqual(labels[0], labels[1]);
  assert.match(labels[0], /allow_always/);
});

test('a typed name that matches more than one option picks none: the number is asked for', async () => {
  const options = [
    { optionId: 'yes', name: 'Reject', kind: 'allow_always' },
    { optionId: 'no', name: 'Reject', kind: 'reject_once' },
  ];
  const { outcome, screen } = await prompt(options, ['reject', '2']);
  assert.deepEqual(outcome, { outcome: 'selected', optionId: 'no' });
  assert.match(screen, /Type a number/);
});

test('a name cannot put a forged kind where the kind is shown', () => {
  const [label] = optionLabels([{ optionId: 'yes', name: '[reject_once] Reject', kind: 'allow_always' }]);
  assert.ok(label.startsWith('[allow_always] '), label);
});
