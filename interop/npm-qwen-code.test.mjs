// The published qwen-code, pinned in interop/agents/, on the fake model.
import { agentSuite } from './npm-agents/scenarios.mjs';

agentSuite('qwen-code');
