/**
 * The running session's live controls (protocol.md §3.11): the model picker (`agent/listModels`
 * → `agent/setModel`, no daemon restart), the thinking level (`agent/setThinkingLevel`), and
 * the model, context use and cost (`agent/getStats`) always visible in a status bar item and
 * the chat footer, refreshed after each run, compaction and switch; and the session's command
 * sandbox in short in the footer (`agent/getState.sandbox`), whose click shows every layer.
 */

import * as vscode from 'vscode';
import type { LanguageClient } from 'vscode-languageclient/node';
import {
  type AgentEventParams, type ListModelsResult, type LiveSettings, Methods, type ModelInfo,
  type SandboxStatus, type SessionState, type SessionStats, type ThinkingLevel,
} from './protocol';
import { type ControlsView, controlsView, modelRows, modelSpec, statusBarText, typedModel } from './shared/controls';
import { cost } from './shared/format';
import type { HostToView } from './shared/messages';

export interface ControlsHost {
  client(): LanguageClient | undefined;
  sessionId(): string | undefined;
  /** The shown session, created (`agent/newSession`) when there is none yet. */
  ensureSession(): Promise<string | undefined>;
  post(m: HostToView): void;
  reportError(e: unknown): void;
}

const THINKING_HELP: Record<ThinkingLevel, string> = {
  off: 'No reasoning', minimal: 'The least reasoning', low: 'Some reasoning', medium: 'More reasoning',
  high: 'Much reasoning', xhigh: 'The most reasoning (Anthropic)',
};

export class LiveControls implements vscode.Disposable {
  private model: ModelInfo | { provider: string; id: string } | undefined;
  private thinkingLevel: ThinkingLevel | undefined;
  private stats: SessionStats | undefined;
  private sandbox: SandboxStatus | undefined;
  private models: ModelInfo[] | undefined;
  private readonly item: vscode.StatusBarItem;
  /** Answers of an older session or connection are dropped (a refresh races a switch). */
  private generation = 0;

  constructor(private readonly host: ControlsHost) {
    this.item = vscode.window.createStatusBarItem('agentLsp.model', vscode.StatusBarAlignment.Right, 99);
    this.item.name = 'Agent model and context';
    this.item.command = 'agentLsp.switchModel';
    this.item.show();
    this.render();
  }

  get view(): ControlsView { return controlsView(this.model, this.thinkingLevel, this.stats, this.sandbox); }

  /** A restarted daemon or another session: forget what was shown and read it again. */
  reset(): void {
    this.generation++;
    this.model = undefined;
    this.thinkingLevel = undefined;
    this.stats = undefined;
    this.sandbox = undefined;
    this.models = undefined;
    this.render();
  }

  async sessionChanged(): Promise<void> {
    this.reset();
    await this.refresh();
  }

  onEvent(p: AgentEventParams): void {
    const ev = p.event;
    if (ev.type === 'model_update') {
      this.apply(ev);
      void this.refresh();
    } else if (ev.type === 'agent_settled' || ev.type === 'compaction_end' || ev.type === 'agent_start') {
      void this.refresh();
    }
  }

  /** Reads the session's model, thinking level and stats from the daemon. */
  async refresh(): Promise<void> {
    const client = this.host.client();
    const sessionId = this.host.sessionId();
    if (!client?.isRunning() || !sessionId) return;
    const generation = this.generation;
    try {
      const [state, stats] = await Promise.all([
        client.sendRequest<SessionState>(Methods.getState, { sessionId }),
        client.sendRequest<SessionStats>(Methods.getStats, { sessionId }),
      ]);
      if (generation !== this.generation || sessionId !== this.host.sessionId()) return;
      this.stats = stats;
      this.sandbox = state.sandbox;
      this.thinkingLevel = state.thinkingLevel;
      if (state.model && (!this.model || modelSpec(this.model) !== modelSpec(state.model))) {
        const known = (await this.listModels()).find((m) => modelSpec(m) === modelSpec(state.model ?? { provider: '', id: '' }));
        if (generation !== this.generation) return;
        this.model = known ?? state.model;
      }
      this.render();
    } catch {
      // A session that went away (restart) is read again on the next change.
    }
  }

  private apply(s: LiveSettings): void {
    this.model = s.model;
    this.thinkingLevel = s.thinkingLevel;
    this.render();
  }

  private render(): void {
    const v = this.view;
    this.item.text = statusBarText(v);
    const lines = v.model
      ? [`Model: ${v.model}`, v.thinkingLevels.length > 1 ? `Thinking: ${v.thinkingLevel}` : 'Thinking: not supported by this model',
        `Context: ${v.context ?? 'unknown window'}`, `Cost: ${cost(v.cost ?? 0)}`, '', 'Click to switch the model']
      : ['No agent session yet: the first prompt starts one.', 'Click to pick its model'];
    this.item.tooltip = lines.join('\n');
    this.host.post({ type: 'controls', controls: v });
  }

  private async listModels(): Promise<ModelInfo[]> {
    if (this.models) return this.models;
    const client = this.host.client();
    if (!client?.isRunning()) return [];
    const r = await client.sendRequest<ListModelsResult>(Methods.listModels, {});
    this.models = r.models;
    return r.models;
  }

  /** "Agent: Switch Model": a quick pick of `agent/listModels`; a typed `provider/id` works too. */
  async pickModel(): Promise<void> {
    const client = this.host.client();
    if (!client?.isRunning()) { void vscode.window.showErrorMessage('The agent daemon is not running.'); return; }
    let models: ModelInfo[];
    try {
      this.models = undefined; // keys or an Ollama may have changed since
      models = await this.listModels();
    } catch (e) {
      this.host.reportError(e);
      return;
    }
    const current = this.model ? modelSpec(this.model) : undefined;
    type Row = vscode.QuickPickItem & { spec: string };
    const rows: Row[] = modelRows(models, current).map((r) => ({ label: `${r.current ? '$(check) ' : ''}${r.label}`, description: r.description, detail: r.detail, spec: r.spec }));
    const pick = vscode.window.createQuickPick<Row>();
    pick.title = 'Agent: Switch Model (the running session switches at its next request)';
    pick.placeholder = 'Model (or type provider/id)';
    pick.matchOnDescription = true;
    pick.matchOnDetail = true;
    pick.items = rows;
    pick.onDidChangeValue((value) => {
      const typed = typedModel(value, models);
      pick.items = typed ? [{ label: typed, description: 'use this model id', alwaysShow: true, spec: typed }, ...rows] : rows;
    });
    const chosen = await new Promise<string | undefined>((resolve) => {
      pick.onDidAccept(() => { resolve(pick.selectedItems[0]?.spec); pick.hide(); });
      pick.onDidHide(() => resolve(undefined));
      pick.show();
    });
    pick.dispose();
    if (!chosen || chosen === current) return;
    await this.setModel(chosen);
  }

  async setModel(model: string): Promise<void> {
    const client = this.host.client();
    const sessionId = await this.host.ensureSession();
    if (!client || !sessionId) return;
    try {
      this.apply(await client.sendRequest<LiveSettings>(Methods.setModel, { sessionId, model }));
      await this.refresh();
    } catch (e) {
      this.host.reportError(e);
    }
  }

  /** "Agent: Set Thinking Level": the levels the current model accepts. */
  async pickThinkingLevel(): Promise<void> {
    const client = this.host.client();
    const sessionId = await this.host.ensureSession();
    if (!client || !sessionId) return;
    if (!this.model) await this.refresh();
    const levels = this.view.thinkingLevels;
    if (levels.length <= 1) {
      void vscode.window.showInformationMessage(`${this.view.model ?? 'This model'} does not reason: its thinking level is always "off".`);
      return;
    }
    const items = levels.map((l) => ({ label: `${l === this.thinkingLevel ? '$(check) ' : ''}${l}`, description: THINKING_HELP[l], level: l }));
    const pick = await vscode.window.showQuickPick(items, { title: 'Agent: Set Thinking Level', placeHolder: `Thinking level of ${this.view.model}` });
    if (!pick || pick.level === this.thinkingLevel) return;
    try {
      this.apply(await client.sendRequest<LiveSettings>(Methods.setThinkingLevel, { sessionId, level: pick.level }));
    } catch (e) {
      this.host.reportError(e);
    }
  }

  dispose(): void { this.item.dispose(); }
}
