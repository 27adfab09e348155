// ESM typings: the same declarations as the CommonJS entry (index.d.ts),
// so TypeScript under `node16`/`nodenext` sees an ES module here, not
// CommonJS types "masquerading" as ESM.
export {
  AcpClient,
  AcpError,
  RpcError,
  PROTOCOL_VERSION,
  setLogger,
  loadNativeBinding,
  SessionView,
  SessionStore,
  SessionFold,
  foldRecording,
  foldRecordingNative,
  applyChanges,
  toMarkdown,
  sanitizeForTerminal,
  escapeMarkdown,
  escapeHtml,
  AgentManager,
  resultCut,
  rawResult,
} from './index.js';
export type * from './index.js';
import * as cjs from './index.js';
export default cjs;
