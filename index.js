'use strict';
// acp-native: drive any Agent Client Protocol agent over stdio from Node.
const { AcpClient } = require('./lib/client.js');
const { AcpError, RpcError } = require('./lib/errors.js');
const native = require('./lib/loader.js');
const { setLogger } = require('./lib/logging.js');
const { SessionView } = require('./lib/session-view.js');
const { SessionFold, foldRecording, applyChanges, toMarkdown } = require('./lib/session-fold.js');

/** Fold a recording in the core: the same result as `foldRecording`. */
function foldRecordingNative(text, limits) {
  return JSON.parse(native.foldRecording(text, limits));
}

/** The ACP protocol version this client speaks. */
const PROTOCOL_VERSION = native.protocolVersion();

module.exports = {
  AcpClient,
  AcpError,
  RpcError,
  PROTOCOL_VERSION,
  setLogger,
  SessionView,
  SessionFold,
  foldRecording,
  foldRecordingNative,
  applyChanges,
  toMarkdown,
};
