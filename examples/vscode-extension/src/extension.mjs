// A minimal extension: one command runs a turn against an ACP agent and
// shows the reply; the agent is closed when the extension deactivates.
import { join } from 'node:path';
import * as vscode from 'vscode';
import { AcpClient, loadNativeBinding } from 'acp-native';

// build.mjs copies the target's binary next to the bundle under this name.
/* global ACP_NATIVE_BINARY */
let client = null;
let output = null;

export function activate(context) {
  // The bundle moved the binary: say where it is before the first client.
  loadNativeBinding(join(context.extensionPath, 'dist', ACP_NATIVE_BINARY));
  output = vscode.window.createOutputChannel('acp-native example');
  context.subscriptions.push(
    output,
    vscode.commands.registerCommand('acpNativeExample.runTurn', (prompt) => runTurn(context, prompt)),
  );
}

async function runTurn(context, prompt = 'say:hello_from_the_extension') {
  if (!client) client = await connect(context);
  const { sessionId } = await client.newSession({ cwd: workspaceDir(context) });
  const texts = [];
  const subscription = client.onSessionUpdate(({ update }) => {
    if (update.sessionUpdate === 'agent_message_chunk' && update.content.type === 'text')
      texts.push(update.content.text);
  });
  try {
    const { stopReason } = await client.prompt({ sessionId, prompt });
    const reply = texts.join('');
    output.appendLine(`[${stopReason}] ${reply}`);
    vscode.window.showInformationMessage(`Agent: ${reply}`);
    return { stopReason, reply };
  } finally {
    subscription.dispose();
  }
}

async function connect(context) {
  const configured = vscode.workspace.getConfiguration('acpNativeExample').get('agentCommand') ?? [];
  // In the extension host process.execPath is the editor's Electron binary:
  // ELECTRON_RUN_AS_NODE=1 makes it run the script as plain Node.
  const [command, ...args] = configured.length
    ? configured
    : [process.execPath, join(context.extensionPath, 'dist', 'mock-agent.mjs')];
  const agent = await AcpClient.connect({
    command,
    args,
    cwd: workspaceDir(context),
    env: command === process.execPath ? { ELECTRON_RUN_AS_NODE: '1' } : undefined,
  });
  agent.on('stderr', (text) => output.append(text));
  return agent;
}

function workspaceDir(context) {
  return vscode.workspace.workspaceFolders?.[0]?.uri.fsPath ?? context.extensionPath;
}

export async function deactivate() {
  const closing = client;
  client = null;
  // close() lets the agent save its state; VS Code waits for this Promise.
  if (closing) await closing.close();
}
