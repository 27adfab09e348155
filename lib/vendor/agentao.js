'use strict';

// agentao's extensions (https://agentao.cn): knowledge about one vendor
// kept out of the generic code. The core answers a cancelled extension
// request with -32800 unless told the vendor's own "cancelled" result.

/** agentao asks the user a free-form question; `cancel()` must answer it. */
const ASK_USER = '_agentao.cn/ask_user';

/** Extension method → its cancelled result, for `cancel(sessionId)`. */
const cancelledResults = {
  [ASK_USER]: JSON.stringify({ outcome: 'cancelled' }),
};

module.exports = { ASK_USER, cancelledResults };
