// Preloaded (NODE_OPTIONS --require) into every Windows node under Wine 8
// by scripts/platform-test.mjs, never shipped. Wine 8 refuses the TCP
// keep-alive options libuv sets, and Node reports that as a failed connect:
// every `fetch` (undici turns keep-alive on before it connects) and npm's
// own downloads fail with `connect UNKNOWN`. Keep-alive is a hint; without
// it the same sockets connect and carry the same bytes.
const net = require('node:net');

net.Socket.prototype.setKeepAlive = function setKeepAlive() {
  return this;
};
