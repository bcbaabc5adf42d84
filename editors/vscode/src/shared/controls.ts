/**
 * The live controls as text: the session's model, thinking level, context use and cost
 * (`agent/setModel`, `model_update`, `agent/getStats`; protocol.md §3.11), for the status bar
 * and the chat footer, and the rows of the model picker. Pure: unit-tested.
 */

import type { ModelInfo, SandboxStatus, SessionStats, ThinkingLevel } from '../protocol';
import { cost, tokens } from './format';
import { sandboxSummary } from './sandbox';

/** What the footer and the status bar show (sent to the chat view as is). */
export interface ControlsView {
  /** `provider/id`, once a session exists. */
  model?: string;
  thinkingLevel?: ThinkingLevel;
  /** The levels the model accepts (one: the model does not reason). */
  thinkingLevels: ThinkingLevel[];
  /** e.g. `2.4k / 128k (2%)`; `?` for a size not known since a compaction. */
  context?: string;
  percent?: number;
  cost?: number;
  /** The session's command sandbox in short (`agent/getState.sandbox`), e.g. `sandbox: workspaceWrite · no network`. */
  sandbox?: { text: string; warn: boolean };
}

export function modelSpec(m: { provider: string; id: string }): string {
  return `${m.provider}/${m.id}`;
}

/** Context use as `tokens / window (percent%)`, undefined when the window is unknown. */
export function contextUse(stats: SessionStats | undefined): { text: string; percent?: number } | undefined {
  const u = stats?.contextUsage;
  if (!u) return undefined;
  if (u.tokens === null || u.percent === null) return { text: `? / ${tokens(u.contextWindow)}` };
  const percent = Math.round(u.percent);
  return { text: `${tokens(u.tokens)} / ${tokens(u.contextWindow)} (${percent}%)`, percent };
}

export function controlsView(model: ModelInfo | { provider: string; id: string } | undefined, thinkingLevel: ThinkingLevel | undefined, stats: SessionStats | undefined, sandbox?: SandboxStatus): ControlsView {
  const use = contextUse(stats);
  const levels = model && 'thinkingLevels' in model ? model.thinkingLevels : [];
  return {
    model: model ? modelSpec(model) : undefined,
    thinkingLevel,
    thinkingLevels: levels,
    context: use?.text,
    percent: use?.percent,
    cost: stats?.cost,
    sandbox: sandbox ? sandboxSummary(sandbox) : undefined,
  };
}

/** The status bar's text: model, thinking level (when the model reasons), context, cost. */
export function statusBarText(v: ControlsView): string {
  if (!v.model) return '$(sparkle) Agent: no session yet';
  const parts = [`$(sparkle) ${v.model}`];
  if (v.thinkingLevel && v.thinkingLevels.length > 1) parts.push(`thinking ${v.thinkingLevel}`);
  if (v.context) parts.push(`ctx ${v.context}`);
  if (v.cost !== undefined) parts.push(cost(v.cost));
  return parts.join(' · ');
}

export interface ModelPickRow { label: string; description: string; detail: string; spec: string; current: boolean }

/** One picker row per model, the current one first and marked. */
export function modelRows(models: ModelInfo[], current: string | undefined): ModelPickRow[] {
  const rows = models.map((m) => {
    const spec = modelSpec(m);
    const price = m.cost.input || m.cost.output ? ` · $${m.cost.input}/$${m.cost.output} per Mtok` : '';
    const extras = [m.reasoning ? 'reasoning' : '', m.input.includes('image') ? 'images' : ''].filter((x) => x !== '').join(', ');
    return {
      label: spec, description: m.name !== m.id ? m.name : '', spec, current: spec === current,
      detail: `context ${tokens(m.contextWindow)}${price}${extras ? ` · ${extras}` : ''}`,
    };
  });
  return [...rows.filter((r) => r.current), ...rows.filter((r) => !r.current)];
}

/** A typed `provider/id` the list does not have (a local server's model), or undefined. */
export function typedModel(value: string, models: ModelInfo[]): string | undefined {
  const v = value.trim();
  if (!/^[^\s/]+\/\S+$/.test(v)) return undefined;
  return models.some((m) => modelSpec(m) === v) ? undefined : v;
}
