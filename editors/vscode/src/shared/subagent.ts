/**
 * A `task` call's child agent (§3.24): its loop events arrive as `subagent_event`s between the
 * call's start and end, and become the call's steps (the child's tool calls and what it says),
 * which the task card shows folded inside it. The child's calls live in `state.tools` like the
 * session's (its approvals name them), marked with `parentId` so no message places them.
 * The child's steps are not in the session's messages: a resumed session shows the task's
 * result only.
 */

import type { AgentEvent, AssistantMessage } from '../protocol';

type ToolEvent = Extract<AgentEvent, { type: 'tool_execution_start' | 'tool_execution_update' | 'tool_execution_end' }>;

/**
 * What the chat reducer lends a child's events: its tool items (`state` is its state). Passed in
 * rather than imported, so this module stays below the reducer that uses it.
 */
export interface SubagentHost<S> {
  ensureTool(state: S, id: string, name: string): { subagent?: SubagentRun };
  applyToolEvent(state: S, ev: ToolEvent): { id: string; parentId?: string };
  adoptTool(state: S, owner: undefined, toolCallId: string): void;
}

export type SubagentStep =
  | { type: 'text'; text: string; streaming: boolean }
  | { type: 'tool'; toolCallId: string };

export interface SubagentRun {
  agent: string;
  steps: SubagentStep[];
  /** Between the child's `agent_start` and `agent_end`. */
  running: boolean;
}

function textOf(message: AssistantMessage): string {
  return (message.content ?? []).map((b) => (b.type === 'text' ? b.text : '')).join('');
}

function lastLiveText(run: SubagentRun): Extract<SubagentStep, { type: 'text' }> | undefined {
  const last = run.steps[run.steps.length - 1];
  return last?.type === 'text' && last.streaming ? last : undefined;
}

export function applySubagentEvent<S>(host: SubagentHost<S>, state: S, parentId: string, agent: string, ev: AgentEvent): void {
  const task = host.ensureTool(state, parentId, 'task');
  const run = task.subagent ??= { agent, steps: [], running: true };
  switch (ev.type) {
    case 'agent_start': run.running = true; break;
    case 'agent_end':
      run.running = false;
      for (const s of run.steps) if (s.type === 'text') s.streaming = false;
      break;
    case 'message_update': {
      const e = ev.assistantMessageEvent;
      if (e.type !== 'text_delta') break;
      const live = lastLiveText(run);
      if (live) live.text += e.delta; else run.steps.push({ type: 'text', text: e.delta, streaming: true });
      break;
    }
    case 'message_end': {
      if (ev.message.role !== 'assistant') break;
      const text = textOf(ev.message as AssistantMessage);
      const live = lastLiveText(run);
      if (live) { live.text = text || live.text; live.streaming = false; } else if (text.trim()) run.steps.push({ type: 'text', text, streaming: false });
      break;
    }
    case 'tool_execution_start':
    case 'tool_execution_update':
    case 'tool_execution_end': {
      const live = lastLiveText(run);
      if (live) live.streaming = false;
      const tool = host.applyToolEvent(state, ev);
      if (!tool.parentId) {
        tool.parentId = parentId;
        // Its approval came first and showed it on its own: it belongs in the task card.
        host.adoptTool(state, undefined, tool.id);
      }
      if (!run.steps.some((s) => s.type === 'tool' && s.toolCallId === tool.id)) run.steps.push({ type: 'tool', toolCallId: tool.id });
      break;
    }
    default: break;
  }
}
