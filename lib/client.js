'use strict';

// AcpClient: the ACP methods over the generic connection (connection.js).
// What is ACP-specific lives here: initialize and its capabilities, the
// session methods and their bookkeeping, prompt/cancel, session updates.

const { native } = require('./loader.js');
const check = require('./validate.js');
const { ConnectionBase, INTERNAL, AGENT_STATUS, RESTARTED, VIEW_CHANGED, rejecting } = require('./connection.js');
const { SessionView } = require('./session-view.js');
const { LIMIT_NAMES } = require('./session-fold.js');
const { invalidArgument } = require('./errors.js');
const { UpdateStream, SESSION_ENDED } = require('./updates.js');
const { resolveAgentOptions } = require('./agents/connect.js');

const PACKAGE_VERSION = require('../package.json').version;

function toPromptBlocks(prompt) {
  if (typeof prompt === 'string') return [{ type: 'text', text: prompt }];
  if (!Array.isArray(prompt)) throw invalidArgument('params.prompt', 'must be a string or an array of content blocks');
  return prompt;
}

/** `{cwd, mcpServers}` defaults of the session-opening methods; cwd must be absolute. */
function sessionParams(params, needsId) {
  const p = check.optionalObject('params', params) ?? {};
  if (needsId) check.string('params.sessionId', p.sessionId);
  const cwd = p.cwd ?? process.cwd();
  check.absolutePath('params.cwd', cwd);
  return { ...p, cwd, mcpServers: p.mcpServers ?? [] };
}

/** `params.sessionId` of a session method's params object. */
function sessionIdIn(params) {
  check.object('params', params);
  return check.string('params.sessionId', params.sessionId);
}

/** The session id of `cancel(sessionId)` or `cancel({sessionId})`. */
function sessionIdOf(arg) {
  return typeof arg === 'string' ? check.string('sessionId', arg) : sessionIdIn(arg);
}

/**
 * A connection to one ACP agent process. See index.d.ts for the API docs.
 */
class AcpClient extends ConnectionBase {
  #agent = null; // the initialize result of the current process
  #views = new Map(); // sessionId → SessionView (lib/session-view.js)

  /** Spawn the agent and run `initialize`; resolves to the ready client. */
  static connect(options, initializeParams) {
    return rejecting(async () => {
      // `{agent: 'id', agents}`: a registry id, installed and resolved first.
      const client = new AcpClient(options?.agent !== undefined ? await resolveAgentOptions(options) : options);
      try {
        await client.initialize(initializeParams);
      } catch (err) {
        client.kill();
        throw err;
      }
      return client;
    });
  }

  /** The `initialize` result, once known. */
  get agent() {
    return this.#agent;
  }

  [AGENT_STATUS]() {
    const agent = this.#agent;
    return {
      protocolVersion: agent?.protocolVersion ?? null,
      agentInfo: agent?.agentInfo ?? null,
      agentCapabilities: agent?.agentCapabilities ?? null,
    };
  }

  [RESTARTED]() {
    this.#agent = null;
    for (const view of this.#views.values()) view.reopen();
  }

  [VIEW_CHANGED](id) {
    for (const view of this.#views.values()) if (view.id === id) view.changed();
  }

  /**
   * A live view of a session, folded in the core (see lib/session-view.js);
   * the same view for the same session until it is closed. Called again
   * while it is open: the same view, unless an option given differs from
   * the open view's (ERR_ACP_INVALID_ARGUMENT naming it: close it first).
   */
  session(sessionId, opts) {
    check.string('sessionId', sessionId);
    check.optionalObject('options', opts);
    check.timerMs('options.intervalMs', opts?.intervalMs);
    for (const limit of LIMIT_NAMES) check.size(`options.${limit}`, opts?.[limit]);
    let view = this.#views.get(sessionId);
    if (!view || view.closed) {
      const { conn, report } = this[INTERNAL];
      const port = {
        native: conn,
        report,
        closed: (v) => this.#views.get(sessionId) === v && this.#views.delete(sessionId),
      };
      view = new SessionView(port, sessionId, opts);
      this.#views.set(sessionId, view);
      return view;
    }
    const conflict = view.conflictingOption(opts);
    if (conflict !== undefined) {
      throw invalidArgument(`options.${conflict}`, `differs from the open view of ${sessionId}'s${typeof opts[conflict] === 'object' ? '' : ` (${opts[conflict]})`}: close() that view to open one with other options`);
    }
    return view;
  }

  onSessionUpdate(handler) {
    return this.onNotification('session/update', handler);
  }

  /**
   * The `session/update`s of one session as an async iterator. Updates
   * wait in a small buffer; while it is full the next batches wait too,
   * so the pace of consumption is the pace of reading from the agent.
   * Ends when `signal` aborts, `closeSession`/`deleteSession` of it succeeds, or the agent exits (after what already
   * arrived), or at once on `return()` (e.g. `break`).
   */
  updates(sessionId, opts = {}) {
    check.string('sessionId', sessionId);
    check.optionalObject('options', opts);
    const signal = check.signal('options.signal', opts.signal);
    const highWaterMark = check.size('options.highWaterMark', opts.highWaterMark, 1);
    return new UpdateStream(this, sessionId, signal, highWaterMark);
  }

  // ---- client → agent ---------------------------------------------------

  initialize(params, options) {
    return rejecting(() => {
      const p = check.optionalObject('params', params) ?? {};
      const { status, handlers, conn, options: clientOptions } = this[INTERNAL];
      const theirs = native.protocolVersion();
      if (p.protocolVersion !== undefined && p.protocolVersion !== theirs) {
        throw invalidArgument('params.protocolVersion', `must be ${theirs} (the version this client speaks) or absent`);
      }
      const served = [...handlers.requestMethods(), ...conn().builtinMethods()];
      const derived = JSON.parse(native.clientCapabilities(served));
      const given = p.clientCapabilities ?? {};
      const clientCapabilities = { ...derived, ...given, fs: { ...derived.fs, ...given.fs } };
      const request = {
        ...p,
        protocolVersion: theirs,
        clientCapabilities,
        clientInfo: p.clientInfo ?? clientOptions.clientInfo ?? { name: 'acp-native', version: PACKAGE_VERSION },
      };
      const callOptions = check.callOptions(options);
      const timeoutMs = callOptions.timeoutMs ?? clientOptions.initializeTimeoutMs;
      const json = check.json('params', request);
      status.initializing();
      return this[INTERNAL].call('initialize', json, timeoutMs, callOptions.signal, {
        result: (result) => {
          this.#agent = result;
          status.initialized();
          return result;
        },
        error: (err) => {
          status.initializeFailed(err);
          // A hung agent is useless: stop it, and report what it said.
          if (err.code === 'ERR_ACP_TIMEOUT') {
            err.stderrTail = conn().stderrTail();
            this.kill();
          }
          const head = this[INTERNAL].stdoutHead();
          if (head.length && (err.code === 'ERR_ACP_TIMEOUT' || err.code === 'ERR_ACP_CLOSED')) {
            err.stdoutHead = head;
            err.message += `\nThe agent printed on stdout (not JSON-RPC: is it started in its ACP mode?):\n${head.map((l) => `  ${l}`).join('\n')}`;
          }
          return err;
        },
      });
    });
  }

  authenticate(params, options) {
    return rejecting(() => this.request('authenticate', check.object('params', params), options));
  }

  logout(params = {}, options) {
    return this.request('logout', params, options);
  }

  newSession(params, options) {
    return rejecting(() =>
      this[INTERNAL].request('session/new', sessionParams(params, false), options, {
        result: (result) => {
          if (typeof result?.sessionId === 'string') this[INTERNAL].status.sessions.add(result.sessionId);
          return result;
        },
      }),
    );
  }

  loadSession(params, options) {
    return this.#opening('session/load', params, options);
  }

  resumeSession(params, options) {
    return this.#opening('session/resume', params, options);
  }

  /** Count a loaded/resumed session as open once the agent accepts it. */
  #opening(method, params, options) {
    return rejecting(() => {
      const p = sessionParams(params, true);
      return this[INTERNAL].request(method, p, options, {
        result: (result) => {
          this[INTERNAL].status.sessions.add(p.sessionId);
          return result;
        },
      });
    });
  }

  closeSession(params, options) {
    return this.#ending('session/close', params, options);
  }

  deleteSession(params, options) {
    return this.#ending('session/delete', params, options);
  }

  #ending(method, params, options) {
    return rejecting(() => {
      const sessionId = sessionIdIn(params);
      return this[INTERNAL].request(method, params, options, {
        result: (result) => {
          this[INTERNAL].status.sessions.delete(sessionId);
          // Its updates() iterators end (no update will come any more).
          this.emit(SESSION_ENDED, sessionId);
          return result;
        },
      });
    });
  }

  listSessions(params = {}, options) {
    return this.request('session/list', params, options);
  }

  setSessionMode(params, options) {
    return rejecting(() => {
      sessionIdIn(params);
      check.string('params.modeId', params.modeId);
      return this.request('session/set_mode', params, options);
    });
  }

  setSessionConfigOption(params, options) {
    return rejecting(() => {
      sessionIdIn(params);
      return this.request('session/set_config_option', params, options);
    });
  }

  /**
   * One turn. A timeout or an abort gives up on it the way `cancel()`
   * does: `$/cancel_request` for the request and `session/cancel` for the
   * turn, so the session takes new prompts again.
   */
  prompt(params, options) {
    return rejecting(() => {
      const sessionId = sessionIdIn(params);
      const p = { ...params, prompt: toPromptBlocks(params.prompt) };
      const { status } = this[INTERNAL];
      // Counted before the request: an early failure settles (and ends it) at once.
      status.promptStarted();
      return this[INTERNAL].request('session/prompt', p, options, {
        result: (result) => {
          status.promptEnded();
          return result;
        },
        error: (err) => {
          status.promptEnded(err.code === 'ERR_ACP_CLOSED');
          if (err.code === 'ERR_ACP_TIMEOUT' || err.code === 'ERR_ACP_ABORTED') this.#cancelTurn(sessionId);
          return err;
        },
      });
    });
  }

  #cancelTurn(sessionId) {
    try {
      this[INTERNAL].conn().cancelSession(sessionId);
    } catch {
      // closing: nothing to cancel any more
    }
  }

  /**
   * Cancel the session's turn: sends `session/cancel` and answers every
   * request of that session the agent still waits on as cancelled.
   * Resolves with how many such requests were answered.
   */
  cancel(params) {
    return rejecting(() => {
      const sessionId = sessionIdOf(params);
      try {
        return Promise.resolve(this[INTERNAL].conn().cancelSession(sessionId));
      } catch (err) {
        throw this[INTERNAL].nativeError(err);
      }
    });
  }
}

module.exports = { AcpClient };
