// The published gemini-cli, pinned in interop/agents/, on the fake model.
import { agentSuite } from './npm-agents/scenarios.mjs';

agentSuite('gemini-cli');
