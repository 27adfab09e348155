// JSON for a terminal or a file: exactly the value (it parses back to it),
// with the characters JSON leaves raw but a terminal or editor would act on
// (DEL, C1 controls, bidi controls, line separators) written as \u escapes.
// JSON.stringify already escapes C0 controls and lone surrogates.

const RAW = /[\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

export function jsonText(value, indent = 2) {
  return JSON.stringify(value, null, indent).replace(RAW, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}
