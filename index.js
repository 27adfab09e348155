'use strict';
// acp-native: drive any Agent Client Protocol agent over stdio from Node.
// Requiring this file does not load the native binary: the first client (or
// `loadNativeBinding`) does, so a bundle can say where it is first.
const { AcpClient } = require('./lib/client.js');
const { AcpError, RpcError } = require('./lib/errors.js');
const { loadNativeBinding, PROTOCOL_VERSION, native } = require('./lib/loader.js');
const { setLogger } = require('./lib/logging.js');
const { SessionView } = require('./lib/session-view.js');
const { SessionStore } = require('./lib/store.js');
const { SessionFold, foldRecording, applyChanges, toMarkdown } = require('./lib/session-fold.js');
const { sanitizeForTerminal, escapeMarkdown, escapeHtml } = require('./lib/sanitize.js');
const { AgentManager } = require('./lib/agents/manager.js');
const { resultCut, rawResult } = require('./lib/results.js');

/** Fold a recording in the core: the same result as `foldRecording`. */
function foldRecordingNative(text, limits) {
  return JSON.parse(native.foldRecording(text, limits));
}

module.exports = {
  AcpClient,
  AcpError,
  RpcError,
  PROTOCOL_VERSION,
  setLogger,
  loadNativeBinding,
  SessionView,
  SessionStore,
  SessionFold,
  foldRecording,
  foldRecordingNative,
  applyChanges,
  toMarkdown,
  sanitizeForTerminal,
  escapeMarkdown,
  escapeHtml,
  AgentManager,
  resultCut,
  rawResult,
};
