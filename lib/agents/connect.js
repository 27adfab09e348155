'use strict';

// `AcpClient.connect({ agent: 'id', agents, ... })`: the id resolved to a
// launch by an AgentManager (the one given, or one made from the options
// given), installed first if needed. The rest of the options pass through;
// `args` are appended to the agent's own and `env` wins over the index's.

const { invalidArgument } = require('../errors.js');

async function resolveAgentOptions(options) {
  if (options === null || typeof options !== 'object' || options.agent === undefined) return options;
  const { agent, agents, onInstallProgress, ...rest } = options;
  if (typeof agent !== 'string' || agent === '') throw invalidArgument('options.agent', 'must be an agent id');
  if (rest.command !== undefined) throw invalidArgument('options.agent', 'cannot be given with options.command');
  const { AgentManager } = require('./manager.js');
  if (agents === undefined)
    throw invalidArgument(
      'options.agents',
      'is needed with options.agent: an AgentManager or its options ({storeDir, index, presets})',
    );
  const manager = agents instanceof AgentManager ? agents : new AgentManager(agents);
  const launch = await manager.launch(agent, { onProgress: onInstallProgress });
  return {
    ...rest,
    command: launch.command,
    args: [...launch.args, ...(rest.args ?? [])],
    env: { ...launch.env, ...rest.env },
  };
}

module.exports = { resolveAgentOptions };
