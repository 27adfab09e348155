// The published claude-agent-acp, pinned in interop/agents/, on the fake model.
import { agentSuite } from './npm-agents/scenarios.mjs';

agentSuite('claude-agent-acp');
