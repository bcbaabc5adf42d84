/** Hook runs (§3.22) as one line of the chat. */

import type { HookRun } from '../protocol';

const DID: Record<string, string> = {
  allow: 'allowed the call', deny: 'denied the call', ask: 'asked for approval', block: 'blocked',
  continue: 'ran', error: 'failed', timeout: 'timed out',
};

/** `PreToolUse hook ./check.sh denied the call: no rm -rf (12 ms)`. */
export function hookLine(h: HookRun): string {
  const did = DID[h.outcome] ?? h.outcome;
  const context = h.additionalContext ? ' and added context' : '';
  const message = h.message ? `: ${h.message}` : '';
  return `${h.event} hook ${h.hook} ${did}${context}${message} (${h.durationMs} ms)`;
}

export function hookLevel(outcome: string): 'info' | 'warning' {
  return outcome === 'deny' || outcome === 'block' || outcome === 'error' || outcome === 'timeout' ? 'warning' : 'info';
}
