/**
 * Messages between the extension host and the chat webview (`postMessage` both ways).
 */

import type { ApprovalDecision, ApprovalScope } from '../protocol';
import type { ChatAction, ChatState } from './chatState';
import type { CompletionItem, CompletionKind } from './completion';
import type { ControlsView } from './controls';

export type ConnectionStatus = 'starting' | 'ready' | 'missing' | 'error' | 'stopped';

export interface ViewStatus { connection: ConnectionStatus; message?: string }

export type HostToView =
  | { type: 'snapshot'; state: ChatState; contexts: string[]; status: ViewStatus }
  | { type: 'action'; action: ChatAction }
  | { type: 'contexts'; contexts: string[] }
  | { type: 'status'; status: ViewStatus }
  | { type: 'focusInput'; text?: string }
  | { type: 'controls'; controls: ControlsView }
  | { type: 'completions'; requestId: number; items: CompletionItem[] }
  /** Open this job's output in the Jobs section ("Agent: Show Jobs"). */
  | { type: 'openJob'; jobId: string };

export type ViewToHost =
  | { type: 'ready' }
  | { type: 'send'; mode: 'prompt' | 'steer' | 'followUp'; text: string }
  | { type: 'abort' }
  | { type: 'approve'; requestId: string; decision: ApprovalDecision; reason?: string; scope?: ApprovalScope }
  | { type: 'openDiff'; toolCallId: string }
  | { type: 'approvalDiff'; requestId: string }
  /** A place an `lsp_*` result names (1-based line and column): opened in the editor. */
  | { type: 'openLocation'; path: string; line: number; column: number }
  | { type: 'removeQueued'; queue: 'steering' | 'followUp'; index: number }
  | { type: 'removeContext'; index: number }
  | { type: 'restore'; messageId: string }
  | { type: 'fork'; messageId: string }
  | { type: 'command'; command: 'newSession' | 'switchSession' | 'switchModel' | 'setThinkingLevel' | 'compact' | 'addFile' | 'restart' | 'openSettings' | 'showSandboxStatus' | 'showJobs' }
  /** The user opened (or closed) a job's output: the host reads it while it is open. */
  | { type: 'watchJob'; jobId: string; open: boolean }
  | { type: 'killJob'; jobId: string }
  | { type: 'complete'; requestId: number; kind: CompletionKind; query: string }
  /** A file chosen in the `@` completion: attached as a context chip. */
  | { type: 'attachFile'; path: string }
  /** An image pasted or dropped into the input (base64, no `data:` prefix). */
  | { type: 'attachImage'; name: string; mimeType: string; data: string };
