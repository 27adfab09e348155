// The published claude-code-acp, pinned in interop/agents/, on the fake model.
import { agentSuite } from './npm-agents/scenarios.mjs';

agentSuite('claude-code-acp');
