'use strict';
// acp-native: drive any Agent Client Protocol agent over stdio from Node.
// Requiring this file does not load the native binary: the first client (or
// `loadNativeBinding`) does, so a bundle can say where it is first.
const { AcpClient } = require('./lib/client.js');
const { AcpError, RpcError } = require('./lib/errors.js');
const { loadNativeBinding, PROTOCOL_VERSION } = require('./lib/loader.js');
const { setLogger } = require('./lib/logging.js');

module.exports = { AcpClient, AcpError, RpcError, PROTOCOL_VERSION, setLogger, loadNativeBinding };
