/**
 * `agent/askUser` in words and choices, free of `vscode` so it is unit-tested: who asks, the
 * quick pick's rows (each option with its description, then a row to type an answer when the
 * question allows one) and the answer the picked rows make.
 */

import type { AskUserParams, AskUserResult } from '../protocol';

/** The row that opens an input box for an answer of the user's own. */
export const TYPE_ROW = 'Type an answer…';

/** One row of the quick pick: an offered option, or the row to type an answer. */
export interface AskRow { label: string; description?: string; typed?: true; alwaysShow?: boolean }

/** "The agent asks" or "MCP server fs asks": whoever wants the answer. */
export function asker(p: Pick<AskUserParams, 'source'>): string {
  return p.source?.mcpServer ? `MCP server ${p.source.mcpServer} asks` : 'The agent asks';
}

/** The quick pick's rows: the options, then the row to type an answer when that is allowed. */
export function askRows(p: AskUserParams): AskRow[] {
  const rows: AskRow[] = (p.options ?? []).map((o) => (o.description ? { label: o.label, description: o.description } : { label: o.label }));
  if (p.allowText) rows.push({ label: `$(edit) ${TYPE_ROW}`, typed: true, alwaysShow: true });
  return rows;
}

/** Whether the question has nothing to pick: straight to the input box. */
export function textOnly(p: AskUserParams): boolean {
  return (p.options ?? []).length === 0 && p.allowText;
}

/**
 * The answer of the picked rows (and the typed text, when the typing row was among them):
 * `accept` with the chosen labels and the text. Nothing picked and nothing typed is no answer:
 * `cancel`, as when the user pressed Escape.
 */
export function answerOf(picked: AskRow[], text?: string): AskUserResult {
  const selected = picked.filter((r) => !r.typed).map((r) => r.label);
  const typed = text?.trim() ? text : undefined;
  if (selected.length === 0 && typed === undefined) return { action: 'cancel' };
  const result: AskUserResult = { action: 'accept' };
  if (selected.length > 0) result.selected = selected;
  if (typed !== undefined) result.text = typed;
  return result;
}

/** The answer as the chat shows it under the question. */
export function answerLine(status: 'pending' | 'answered' | 'declined' | 'cancelled', selected?: string[], text?: string): string {
  switch (status) {
    case 'pending': return 'Waiting for your answer in the picker at the top of the window.';
    case 'declined': return 'You declined to answer.';
    case 'cancelled': return 'Not answered.';
    case 'answered': return `You answered: ${[...(selected ?? []), ...(text !== undefined ? [`“${text}”`] : [])].join(', ')}`;
  }
}
