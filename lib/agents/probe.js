'use strict';

// Readiness probe: start the agent, `initialize`, try `session/new`, and
// say what a user would need to do next:
//  - 'ready': a session opens;
//  - 'needs-auth': `session/new` answers -32000 (auth required) — the
//    agent's `authMethods` say how;
//  - 'failed': it would not start, initialize or open a session (with the
//    error and the tail of its stderr).
// The agent is always stopped afterwards; its session's scratch directory
// is removed.

const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const AUTH_REQUIRED = -32000;

function tail(text, max = 4096) {
  const s = String(text ?? '');
  return s.length > max ? s.slice(-max) : s;
}

/**
 * Probe the agent launched with `clientOptions`; never rejects.
 *
 * @param {import('../../index').AcpClientOptions} clientOptions
 * @param {{ cwd?: string, timeoutMs?: number, signal?: AbortSignal }} [options]
 * @returns {Promise<import('../../types/agents').AgentProbe>}
 */
async function probeAgent(clientOptions, { cwd, timeoutMs = 30_000, signal } = {}) {
  const { AcpClient } = require('../client.js');
  // The probe's session gets a scratch directory of its own unless told: nothing an agent writes there stays.
  const scratch = cwd === undefined ? fs.mkdtempSync(path.join(os.tmpdir(), 'acp-probe-')) : null;
  cwd ??= /** @type {string} */ (scratch); // made when cwd is undefined
  const started = Date.now();
  let stderr = '';
  let client;
  const base = { checkedAt: started };
  try {
    client = new AcpClient({
      ...clientOptions,
      initializeTimeoutMs: timeoutMs,
      requestTimeoutMs: timeoutMs,
      stderrTailBytes: 8192,
    });
    client.on('stderr', (text) => {
      stderr = tail(stderr + text, 8192);
    });
    const init = await client.initialize({}, { signal });
    const info = {
      ...base,
      protocolVersion: init.protocolVersion,
      agentInfo: init.agentInfo ?? null,
      agentCapabilities: init.agentCapabilities ?? {},
      authMethods: Array.isArray(init.authMethods) ? init.authMethods : [],
    };
    try {
      await client.newSession({ cwd, mcpServers: [] }, { signal });
      return { status: 'ready', ...info };
    } catch (err) {
      if (err.code === 'ERR_ACP_RPC' && err.rpcCode === AUTH_REQUIRED) return { status: 'needs-auth', ...info };
      return {
        status: 'failed',
        ...info,
        error: { code: err.code, message: err.message },
        stderrTail: tail(err.stderrTail ?? stderr),
      };
    }
  } catch (err) {
    return {
      status: 'failed',
      ...base,
      error: { code: err?.code ?? 'ERR_ACP_SPAWN', message: String(err?.message ?? err) },
      stderrTail: tail(err?.stderrTail ?? client?.exitInfo?.stderrTail ?? stderr),
    };
  } finally {
    if (client) {
      client.kill();
      await client.close().catch(() => {});
    }
    if (scratch) fs.rmSync(scratch, { recursive: true, force: true });
  }
}

module.exports = { probeAgent, AUTH_REQUIRED };
