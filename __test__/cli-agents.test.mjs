// `acp-native agents …` and `chat --agent ID` against a fixture index file
// whose archive is served from 127.0.0.1. Index strings are the registry's
// (agent-controlled): they must reach the terminal as text.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { AGENT, agentProgram, binaryAgent, scratchDir, serve, tarGz } from './agents-fixtures.mjs';

const require = createRequire(import.meta.url);
const { currentTarget } = require('../lib/agents/schema.js');
const CLI = fileURLToPath(new URL('../cli/acp-native.mjs', import.meta.url));
const ARCHIVE = tarGz([{ name: `bin/${AGENT}`, data: agentProgram(), mode: 0o755 }]);

function runCli(args, input = '') {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [CLI, ...args], {
      stdio: ['pipe', 'pipe', 'pipe'],
      env: { ...process.env, NO_COLOR: '1' },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    // 'close', not 'exit': the output may still be arriving when the process exits.
    child.on('close', (code) => resolve({ code, stdout, stderr }));
    child.stdin.end(input);
  });
}

describe('acp-native agents', () => {
  let server;
  let common;
  before(async () => {
    server = await serve({ '/agent.tar.gz': { body: ARCHIVE } });
    const dir = scratchDir('acp-cli-agents-');
    const entry = binaryAgent('fixture', '1.0.0', currentTarget(), server.url('/agent.tar.gz'), {
      cmd: `./bin/${AGENT}`,
    });
    entry.name = 'Fixture \x1b]0;pwned\x07\x1b[2J\u202eagent';
    entry.description = 'line one\x1b[31m red';
    const index = join(dir, 'index.json');
    writeFileSync(index, JSON.stringify({ version: '1', agents: [entry] }));
    common = ['--store', join(dir, 'store'), '--index', index];
  });
  after(() => server?.close());

  it('list, install, info, probe, chat --agent, remove; agent strings shown as text', async () => {
    let r = await runCli(['agents', 'list', ...common]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(
      r.stdout,
      /^fixture\s+1\.0\.0\s+Fixture \\e\]0;pwned\\x07\\e\[2J\\u202eagent — not installed \[binary\]$/m,
    );
    assert.ok(!r.stdout.includes('\x1b') && !r.stdout.includes('\u202e'), 'no raw ESC or RLO');

    r = await runCli(['agents', 'install', 'fixture', ...common]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^installed: fixture 1\.0\.0 in .*fixture[\\/]1\.0\.0$/m);
    assert.match(r.stderr, /downloading http:\/\/127\.0\.0\.1:\d+\/agent\.tar\.gz\nunpacking…/);
    r = await runCli(['agents', 'install', 'fixture', ...common]);
    assert.match(r.stdout, /^already installed: fixture 1\.0\.0/m);

    r = await runCli(['agents', 'info', 'fixture', ...common]);
    assert.match(r.stdout, /line one\\e\[31m red/);
    assert.match(r.stdout, /^installed: 1\.0\.0 \(binary\)$/m);
    assert.ok(!r.stdout.includes('\x1b'), 'no raw ESC');

    r = await runCli(['agents', 'probe', 'fixture', ...common]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^fixture: ready$/m);
    assert.match(r.stdout, /^capabilities: \{"loadSession":true/m);
    r = await runCli(['agents', 'probe', 'fixture', '--json', ...common]);
    assert.equal(JSON.parse(r.stdout).status, 'ready');

    r = await runCli(['chat', '--agent', 'fixture', ...common], 'say:hello_from_the_store\n');
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /hello from the store/);

    r = await runCli(['agents', 'remove', 'fixture', ...common]);
    assert.equal(r.code, 0);
    r = await runCli(['agents', 'list', '--json', ...common]);
    assert.deepEqual(JSON.parse(r.stdout).agents[0].installed, []);
  });

  it('errors are one line, not a stack; usage errors exit 2', async () => {
    let r = await runCli(['agents', 'install', 'nope', ...common]);
    assert.equal(r.code, 1);
    assert.equal(r.stderr, 'acp-native: no agent "nope" in the index or the presets\n');
    r = await runCli(['agents', 'install', ...common]);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /agents install needs an agent ID/);
    r = await runCli(['chat', '--agent', 'fixture', ...common, '--', 'node']);
    assert.equal(r.code, 2);
  });

  it('draws a progress bar on a terminal', async () => {
    const { progressPrinter } = await import('../cli/agents.mjs');
    let text = '';
    const print = progressPrinter({ isTTY: true, write: (s) => (text += s) });
    print({ phase: 'download', receivedBytes: 0, url: 'http://x/a.tgz' });
    print({ phase: 'download', receivedBytes: 2 * 1048576, totalBytes: 4 * 1048576 });
    print({ phase: 'download', receivedBytes: 4 * 1048576, totalBytes: 4 * 1048576 });
    print({ phase: 'extract' });
    assert.match(text, /\[#{30}\] 4\.0 MiB \/ 4\.0 MiB\nunpacking…\n$/);
  });
});
