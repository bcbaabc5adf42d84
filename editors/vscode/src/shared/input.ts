/**
 * What the chat input does with a key press or a button: Enter sends a prompt when idle and a
 * steering message while a run is active; the secondary action (Alt+Enter or the "Follow up"
 * button) queues a follow-up; Escape aborts a running prompt. Pure so it can be unit-tested.
 */

export type InputAction = 'prompt' | 'steer' | 'followUp' | 'abort' | 'newline' | 'none';

export interface KeyInfo { key: string; shiftKey: boolean; altKey: boolean; ctrlKey: boolean; metaKey: boolean; isComposing?: boolean }

export function actionForKey(k: KeyInfo, running: boolean, text: string): InputAction {
  if (k.isComposing) return 'none';
  if (k.key === 'Escape') return running ? 'abort' : 'none';
  if (k.key !== 'Enter') return 'none';
  if (k.shiftKey) return 'newline';
  const empty = text.trim() === '';
  if (k.altKey || k.ctrlKey || k.metaKey) {
    if (empty) return 'none';
    return running ? 'followUp' : 'prompt';
  }
  if (empty) return 'none';
  return running ? 'steer' : 'prompt';
}

/** The primary button's label for the current state. */
export function primaryLabel(running: boolean): string {
  return running ? 'Steer' : 'Send';
}
