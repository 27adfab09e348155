'use strict';
// acp-native: drive any Agent Client Protocol agent over stdio from Node.
const { AcpClient } = require('./lib/client.js');
const { AcpError, RpcError } = require('./lib/errors.js');
const native = require('./lib/loader.js');
const { setLogger } = require('./lib/logging.js');

/** The ACP protocol version this client speaks. */
const PROTOCOL_VERSION = native.protocolVersion();

module.exports = { AcpClient, AcpError, RpcError, PROTOCOL_VERSION, setLogger };
