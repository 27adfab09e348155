'use strict';
// The generated napi-rs loader picks the right prebuilt binary for this
// platform (or a local build next to the package root).
module.exports = require('../binding.js');
