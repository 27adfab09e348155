'use strict';

// Vendor extensions the client knows out of the box. Each vendor module
// exports what it contributes; this file merges them.

const agentao = require('./agentao.js');

/** Extension method → cancelled result (JSON text), from every vendor. */
const cancelledResults = { ...agentao.cancelledResults };

module.exports = { cancelledResults, agentao };
