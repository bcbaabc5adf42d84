/**
 * Answers `agent/askUser` in VS Code's idiom: a quick pick of the offered answers (their
 * descriptions beside them; several may be checked when `multiSelect`), a row to type an answer
 * of one's own when `allowText` (then an input box), and a title button to decline. Escape is
 * `cancel`; the server's `$/cancelRequest` (the run was aborted) closes whatever is open.
 */

import * as vscode from 'vscode';
import type { AskUserParams, AskUserResult } from './protocol';
import { answerOf, asker, askRows, type AskRow, textOnly } from './shared/ask';

export interface Cancellation { isCancellationRequested: boolean; onCancellationRequested(listener: () => void): vscode.Disposable }

const DECLINE: vscode.QuickInputButton = { iconPath: new vscode.ThemeIcon('circle-slash'), tooltip: 'Decline to answer' };

/** One open quick input: settles once, with what the user did or `cancel`. */
function settleOnce<T>(input: vscode.QuickInput, token: Cancellation, run: (done: (v: T) => void) => void, cancelled: T): Promise<T> {
  return new Promise<T>((resolve) => {
    let settled = false;
    const disposables: vscode.Disposable[] = [];
    const done = (v: T) => {
      if (settled) return;
      settled = true;
      disposables.forEach((d) => d.dispose());
      input.dispose();
      resolve(v);
    };
    disposables.push(input.onDidHide(() => done(cancelled)));
    disposables.push(token.onCancellationRequested(() => done(cancelled)));
    run(done);
    if (token.isCancellationRequested) done(cancelled);
  });
}

/** The input box for an answer of the user's own; undefined when dismissed. */
function typeAnswer(p: AskUserParams, title: string, token: Cancellation): Promise<string | undefined | 'decline'> {
  const box = vscode.window.createInputBox();
  box.title = title;
  box.prompt = p.question;
  box.placeholder = 'Your answer (Enter sends, Escape cancels)';
  box.ignoreFocusOut = true;
  box.buttons = [DECLINE];
  return settleOnce<string | undefined | 'decline'>(box, token, (done) => {
    box.onDidTriggerButton(() => done('decline'));
    box.onDidAccept(() => { if (box.value.trim() !== '') done(box.value); });
    box.show();
  }, undefined);
}

type PickRow = vscode.QuickPickItem & { row: AskRow };

/** Asks the question; the result goes back to the daemon as is. */
export async function askUser(p: AskUserParams, token: Cancellation, sessionNote = ''): Promise<AskUserResult> {
  const title = `${asker(p)}${sessionNote}`;
  if (textOnly(p)) {
    const text = await typeAnswer(p, title, token);
    return text === 'decline' ? { action: 'decline' } : answerOf([], text);
  }
  const pick = vscode.window.createQuickPick<PickRow>();
  pick.title = `${title}: ${p.question}`;
  pick.placeholder = p.multiSelect ? 'Check every answer that applies, then press Enter' : 'Choose an answer';
  pick.canSelectMany = p.multiSelect === true;
  pick.ignoreFocusOut = true;
  pick.matchOnDescription = true;
  pick.buttons = [DECLINE];
  pick.items = askRows(p).map((row) => ({ label: row.label, description: row.description, alwaysShow: row.alwaysShow, row }));
  const picked = await settleOnce<AskRow[] | 'decline' | undefined>(pick, token, (done) => {
    pick.onDidTriggerButton(() => done('decline'));
    pick.onDidAccept(() => {
      const rows = (p.multiSelect ? pick.selectedItems : pick.activeItems.slice(0, 1)).map((i) => i.row);
      if (rows.length > 0) done(rows);
    });
    pick.show();
  }, undefined);
  if (picked === 'decline') return { action: 'decline' };
  if (picked === undefined) return { action: 'cancel' };
  if (!picked.some((r) => r.typed)) return answerOf(picked);
  if (token.isCancellationRequested) return { action: 'cancel' };
  const text = await typeAnswer(p, title, token);
  if (text === 'decline') return { action: 'decline' };
  // Escape in the box after picking the typing row: nothing was answered.
  return text === undefined ? { action: 'cancel' } : answerOf(picked, text);
}
