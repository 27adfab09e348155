import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { AcpClient } from '../index.mjs';

export const MOCK_AGENT = fileURLToPath(new URL('../mock-agent/agent.mjs', import.meta.url));

/** A client on a fresh mock agent process. */
export function mockClient(options = {}, agentArgs = []) {
  return new AcpClient({ command: process.execPath, args: [MOCK_AGENT, ...agentArgs], ...options });
}

/** Client + initialize + session/new; collects every session/update. */
export async function mockSession(options = {}, agentArgs = []) {
  const updates = [];
  const client = mockClient(
    { ...options, onSessionUpdate: (p) => { updates.push(p.update); options.onSessionUpdate?.(p); } },
    agentArgs,
  );
  await client.initialize();
  const { sessionId } = await client.newSession();
  return { client, sessionId, updates };
}

/** The texts of the agent_message_chunk updates, joined. */
export function agentText(updates) {
  return updates
    .filter((u) => u.sessionUpdate === 'agent_message_chunk')
    .map((u) => u.content.text)
    .join('');
}

/** What the mock reported for a `kind=` line (permission=, ext=, request=). */
export function reported(updates, kind) {
  const line = updates
    .filter((u) => u.sessionUpdate === 'agent_message_chunk' && u.content.text.startsWith(`${kind}=`))
    .at(-1);
  return line ? JSON.parse(line.content.text.slice(kind.length + 1)) : undefined;
}

/** Is this pid still a live (non-zombie) process? */
export function alive(pid) {
  // Without /proc (macOS, Windows) fall back to signal 0, which cannot
  // tell a zombie from a live process.
  if (!existsSync('/proc/self/stat')) {
    try {
      process.kill(pid, 0);
      return true;
    } catch (err) {
      return err.code === 'EPERM';
    }
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
    return state !== 'Z' && state !== 'X';
  } catch {
    return false;
  }
}

/** pid, parent, process group, session and state of every process, from /proc (Linux). */
export function processes() {
  const out = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      out.push({
        pid: Number(name),
        state: fields[0],
        ppid: Number(fields[1]),
        pgrp: Number(fields[2]),
        sid: Number(fields[3]),
      });
    } catch {
      // gone meanwhile
    }
  }
  return out;
}
