// A stand-in for the binding's AgentConnection: unit tests of lib/ drive
// the facade with hand-made batches, no process spawned. It records every
// call the facade makes; `deliver(items)` hands it a batch.
import loader from '../lib/loader.js';

const { native } = loader;

export const CONNECTION_FACTORY = Symbol.for('acp-native.connectionFactory');
export const KIND = native.itemKinds();

export class FakeConnection {
  pid = 4242;
  calls = [];
  acks = 0;
  #onBatch;
  #nextId = 1;
  openTerminals = 0;
  noiseLines = 0;

  constructor(options, onBatch) {
    this.options = options;
    this.#onBatch = onBatch;
  }

  /** Deliver one batch of `[kind, a, b]` triples (flattened). */
  deliver(items) {
    this.#onBatch(JSON.stringify(items.flat()));
  }

  deliverText(text) {
    this.#onBatch(text);
  }

  #record(name, ...args) {
    this.calls.push([name, ...args]);
  }

  request(method, params, timeoutMs) {
    this.#record('request', method, params, timeoutMs);
    return this.#nextId++;
  }
  notify(method, params) {
    this.#record('notify', method, params);
  }
  abandon(id, notifyAgent) {
    this.#record('abandon', id, notifyAgent);
    return true;
  }
  respond(token, result) {
    this.#record('respond', token, result);
    return true;
  }
  respondError(token, code, message, data) {
    this.#record('respondError', token, code, message, data);
    return true;
  }
  respondChosenError(token, code, message, data) {
    this.#record('respondChosenError', token, code, message, data);
    return true;
  }
  cancelSession(sessionId) {
    this.#record('cancelSession', sessionId);
    return 0;
  }
  ack() {
    this.acks++;
  }
  close() {
    this.#record('close');
  }
  kill() {
    this.#record('kill');
  }
  setRef(keepAlive) {
    this.#record('setRef', keepAlive);
  }
  exitInfo() {
    return null;
  }
  setHostHandler(method, handled) {
    this.#record('setHostHandler', method, handled);
  }
  builtinMethods() {
    return [];
  }
  historyJson() {
    return '[]';
  }
  statusJson() {
    return JSON.stringify({
      pid: this.pid,
      messagesIn: 0,
      messagesOut: 0,
      bytesIn: 0,
      bytesOut: 0,
      noiseLines: 0,
      pendingRequests: {},
      pendingAgentRequests: {},
    });
  }
  release() {
    this.#record('release');
  }
  stderrTail() {
    return 'the tail';
  }
}

/** Options that make an AcpClient use a FakeConnection; `.conns` collects them. */
export function fakeOptions(extra = {}) {
  const conns = [];
  const options = {
    command: 'fake-agent',
    ...extra,
    [CONNECTION_FACTORY]: (nativeOptions, onBatch) => {
      const conn = new FakeConnection(nativeOptions, onBatch);
      conns.push(conn);
      return conn;
    },
  };
  return { options, conns };
}

/** Wait for the setImmediate-deferred acknowledgements. */
export const turn = () => new Promise((r) => setImmediate(r));
