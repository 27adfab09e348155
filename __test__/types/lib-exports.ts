// The JS implementation (lib/, type-checked from its JSDoc) against the
// public typings: each export of index.js must be assignable to what
// index.d.ts declares. Checked by tsconfig.lib.json (scripts/check-types.mjs).
import type * as api from '../../index';
import { AcpClient } from '../../lib/client.js';
import { AcpError, RpcError } from '../../lib/errors.js';
import { loadNativeBinding, PROTOCOL_VERSION } from '../../lib/loader.js';
import { setLogger } from '../../lib/logging.js';
import type { SessionView } from '../../lib/session-view.js';
import { SessionStore } from '../../lib/store.js';
import { SessionFold, foldRecording, applyChanges, toMarkdown } from '../../lib/session-fold.js';
import { sanitizeForTerminal, escapeMarkdown, escapeHtml } from '../../lib/sanitize.js';
import { AgentManager } from '../../lib/agents/manager.js';
import { resultCut, rawResult } from '../../lib/results.js';

export const checks: { [K in keyof typeof api]?: (typeof api)[K] } = {
  AcpClient,
  AcpError,
  RpcError,
  PROTOCOL_VERSION,
  setLogger,
  loadNativeBinding,
  SessionStore,
  SessionFold,
  foldRecording,
  applyChanges,
  toMarkdown,
  sanitizeForTerminal,
  escapeMarkdown,
  escapeHtml,
  AgentManager,
  resultCut,
  rawResult,
};
// Made by client.session(), not by `new`: only its instances are public.
export const view: api.SessionView = null as unknown as InstanceType<typeof SessionView>;
