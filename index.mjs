// ESM entry: the same objects as the CommonJS entry.
import cjs from './index.js';

export const {
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
} = cjs;
export default cjs;
