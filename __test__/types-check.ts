import { AcpClient, AcpError, type SessionUpdate } from '../index.js';
const c = new AcpClient({ command: 'x', handlers: { 'session/request_permission': async (p) => ({ outcome: { outcome: 'selected', optionId: p.options[0].optionId } }) } });
c.onSessionUpdate(({ update }) => { if (update.sessionUpdate === 'plan') update.entries.map((e) => e.content); });
c.on('exit', (i) => i.exitCode);
async function f() { const r = await c.prompt({ sessionId: 's', prompt: 'hi' }); const s: string = r.stopReason; const u: SessionUpdate | null = null; return [s, u]; }
f().catch((e: AcpError) => e.code);
const b = new AcpClient({ command: 'x', fs: { roots: ['/p'], readOnly: true }, terminals: { maxTerminals: 4, env: { CI: '1' } } }); const open: number = b.openTerminals; void open;
