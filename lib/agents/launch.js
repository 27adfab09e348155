'use strict';

// An install record → the AcpClient options that run it: the program
// itself, never a wrapper (no npx, no shell, no `.cmd` shim), so the pid
// the client holds is the agent's and it dies with the client.
//  - npx: `<node> <entry> …args`; the Node is the host's choice, default
//    this process's executable; under Electron that is Electron itself,
//    run as plain Node with ELECTRON_RUN_AS_NODE=1;
//  - uvx: `<venv python> -c <call the console script NAME> NAME …args`:
//    the generated script (a shebang, or a Windows .exe launcher) names the
//    staging path the venv was built in, so neither is run; the python
//    itself finds its venv from where it is;
//  - binary: `<dist>/<cmd> …args`.

const path = require('node:path');

// What pip's generated console script does, from the venv's python itself.
const CONSOLE_SCRIPT = [
  'import sys',
  'from importlib.metadata import entry_points',
  "found = [e for e in entry_points(group='console_scripts') if e.name == sys.argv[1]]",
  "if not found: sys.exit('acp-native: no console script ' + sys.argv[1])",
  'sys.argv = sys.argv[1:]',
  'sys.exit(found[0].load()())',
].join('\n');
const { AcpError } = require('../errors.js');

/**
 * `{command, args, env}` for the installed version in `dir`. Options:
 * `node` (a Node executable for npx agents), `electron` (default: whether
 * this process is Electron).
 *
 * @param {any} record the install record (store.js)
 * @param {string} dir
 * @param {{ node?: string, electron?: boolean }} [options]
 */
function launchOptions(record, dir, { node, electron = Boolean(process.versions.electron) } = {}) {
  const abs = (rel) => path.join(dir, ...String(rel).split('/'));
  const env = { ...(record.env ?? {}) };
  const args = [...(record.args ?? [])];
  switch (record.kind) {
    case 'npx': {
      const command = node ?? process.execPath;
      // Electron's own executable runs scripts only as Node with this set.
      if (electron && command === process.execPath) env.ELECTRON_RUN_AS_NODE = '1';
      return { command, args: [abs(record.entry), ...args], env };
    }
    case 'uvx':
      return { command: abs(record.python), args: ['-c', CONSOLE_SCRIPT, record.script, ...args], env };
    case 'binary':
      return { command: abs(record.entry), args, env };
    case 'preset':
      return { command: record.command, args, env };
    default:
      throw new AcpError(
        'ERR_ACP_AGENT_INSTALL',
        `install record of kind ${JSON.stringify(record.kind)} is not launchable; reinstall the agent`,
        {},
      );
  }
}

module.exports = { launchOptions };
