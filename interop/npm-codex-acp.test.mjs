// The published codex-acp, pinned in interop/agents/, on the fake model.
import { agentSuite } from './npm-agents/scenarios.mjs';

agentSuite('codex-acp');
