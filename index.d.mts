// Types of the ESM entry (index.mjs): the names of index.d.ts, plus the
// default export (the CommonJS module object, as `import acp from` gives).
import * as cjs from './index.js';

export * from './index.js';
export default cjs;
