//! Issue 33: "Agent: Run Doctor" runs `agent-lsp doctor` as the daemon runs (its binary,
//! environment and workspace folder) and writes the report to the agent-lsp output channel.
'use strict';

exports.register = ({ testCase, until, runCommand, readTraces }) => {
  testCase('Agent: Run Doctor writes the set-up report for the workspace to the output channel', async ({ page }) => {
    await runCommand(page, 'Agent: Run Doctor');
    const report = await until('the doctor report in the output channel', async () => {
      const traces = readTraces();
      const at = traces.lastIndexOf('agent-lsp doctor (');
      const rest = at < 0 ? '' : traces.slice(at);
      return /problems? found\.|No problems found\./.test(rest) ? rest : undefined;
    }, 30000);
    // Run as the daemon runs: the binary the .vsix carries (e2e.sh sets no agentLsp.serverPath).
    const header = `agent-lsp doctor (${process.env.BUNDLED_DAEMON}: bundled with the extension`;
    if (!report.startsWith(header)) throw new Error(`the doctor did not run the bundled daemon: ${report.split('\n')[0]}`);
    // The daemon's environment: the mock is its model (e2e.sh's OPENAI_BASE_URL), so the model
    // check names it; every check has its line.
    if (!/ok {2}model {5}openai\//.test(report)) throw new Error(`no model line: ${report.slice(0, 600)}`);
    for (const name of ['keys', 'sandbox', 'sessions', 'mcp', 'binary']) {
      if (!new RegExp(`\\b${name}\\b`).test(report)) throw new Error(`no ${name} check: ${report.slice(0, 900)}`);
    }
  });
};
