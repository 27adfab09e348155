// The CommonJS entry's types (checked under node16 and nodenext).
import acp = require('acp-native');

const client = new acp.AcpClient({ command: 'agentao' });
client.onSessionUpdate(({ update }) => update.sessionUpdate);
const version: number = acp.PROTOCOL_VERSION;
void version;
// @ts-expect-error no such export
acp.NotAThing;
acp.AgentManager;
