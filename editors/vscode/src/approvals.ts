/**
 * Pending `agent/beforeToolCall` requests: each gets an id the chat view answers with. A request
 * the server cancels (`$/cancelRequest`, e.g. on abort) is settled as cancelled and its card
 * removed; a late click is ignored. Free of `vscode` so it is unit-tested directly.
 */

import type { BeforeToolCallParams, BeforeToolCallResult } from './protocol';

export interface Cancellation { isCancellationRequested: boolean; onCancellationRequested(listener: () => void): unknown }

export type ApprovalOutcome = 'allowed' | 'blocked' | 'cancelled';

export interface ApprovalListener {
  requested(requestId: string, params: BeforeToolCallParams): void;
  settled(requestId: string, outcome: ApprovalOutcome, reason?: string): void;
}

interface Pending { params: BeforeToolCallParams; resolve(r: BeforeToolCallResult): void }

export class ApprovalRegistry {
  private readonly pending = new Map<string, Pending>();
  private next = 1;

  constructor(private readonly listener: ApprovalListener) {}

  ask(params: BeforeToolCallParams, token?: Cancellation): Promise<BeforeToolCallResult> {
    const requestId = `approval-${this.next++}`;
    return new Promise((resolve) => {
      this.pending.set(requestId, { params, resolve });
      token?.onCancellationRequested(() => this.cancel(requestId));
      this.listener.requested(requestId, params);
      if (token?.isCancellationRequested) this.cancel(requestId);
    });
  }

  /** Answers a request from the user; false when it is no longer pending. */
  answer(requestId: string, result: BeforeToolCallResult): boolean {
    const p = this.pending.get(requestId);
    if (!p) return false;
    this.pending.delete(requestId);
    p.resolve(result);
    const allowed = result.decision === 'allow' || result.decision === 'allowAlways';
    this.listener.settled(requestId, allowed ? 'allowed' : 'blocked', result.reason);
    return true;
  }

  cancel(requestId: string): void {
    const p = this.pending.get(requestId);
    if (!p) return;
    this.pending.delete(requestId);
    // The server no longer waits for this answer; resolve so nothing dangles.
    p.resolve({ decision: 'block', reason: 'Cancelled' });
    this.listener.settled(requestId, 'cancelled');
  }

  /** Cancels every pending request of a session (its run was aborted or ended). */
  cancelSession(sessionId: string): void {
    for (const [id, p] of [...this.pending]) if (p.params.sessionId === sessionId) this.cancel(id);
  }

  get(requestId: string): BeforeToolCallParams | undefined { return this.pending.get(requestId)?.params; }
  get size(): number { return this.pending.size; }
}
