'use strict';

// Results of our ACP requests that came cut (over `maxResultBytes`, see
// crates/acp-core/src/acp/results.rs): each result object keeps a native
// handle to the agent's full text for as long as the host keeps the
// object. The text is read on demand; V8 knows the handle's size, so a
// result the host drops takes its full text with it at the next GC.

const { native } = require('./loader.js');

const full = new WeakMap(); // cut result object → native handle of its full text

/** Tie the full text's `handle` to `result` (the cut result); returns `result`. */
function keepFullResult(result, handle) {
  if (handle && result !== null && typeof result === 'object') full.set(result, handle);
  return result;
}

/** `to`, a copy of `from` the library returns instead (`{ ...result, more }`), keeps its full text. */
function sameFullResult(from, to) {
  const handle = from !== null && typeof from === 'object' ? full.get(from) : undefined;
  return keepFullResult(to, handle);
}

/** Whether `result` came cut: it holds `$omitted` markers, `rawResult(result)` the agent's text. */
function resultCut(result) {
  return result !== null && typeof result === 'object' && full.has(result);
}

/** The agent's full result text of a cut `result`; `undefined` when `result` is whole. */
function rawResult(result) {
  const handle = result !== null && typeof result === 'object' ? full.get(result) : undefined;
  return handle === undefined ? undefined : native.fullResultText(handle);
}

module.exports = { keepFullResult, sameFullResult, resultCut, rawResult };
