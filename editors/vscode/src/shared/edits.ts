/**
 * Proposed file contents for the diff view: applies pi's `edit` arguments (`edits: [{oldText,
 * newText}]`, each oldText unique) or `write` arguments (`content`) to the current text. Used to
 * show an approval's change in VS Code's diff editor before it is allowed.
 */

export class EditPreviewError extends Error {}

export function proposedContent(toolName: string, args: Record<string, unknown>, current: string): string {
  if (toolName === 'write') {
    if (typeof args.content !== 'string') throw new EditPreviewError('write: no content');
    return args.content;
  }
  if (toolName !== 'edit') throw new EditPreviewError(`${toolName}: not an edit tool`);
  const edits = Array.isArray(args.edits) ? args.edits
    : typeof args.oldText === 'string' ? [{ oldText: args.oldText, newText: args.newText }] : undefined;
  if (!edits) throw new EditPreviewError('edit: no edits');
  let text = current;
  for (const e of edits as { oldText?: unknown; newText?: unknown }[]) {
    if (typeof e.oldText !== 'string' || typeof e.newText !== 'string') throw new EditPreviewError('edit: malformed edit');
    const at = text.indexOf(e.oldText);
    if (at < 0) throw new EditPreviewError('edit: oldText not found in the current text');
    text = text.slice(0, at) + e.newText + text.slice(at + e.oldText.length);
  }
  return text;
}

/** Classifies the lines of a unified diff for colouring. */
export function diffLines(diff: string): { cls: 'add' | 'del' | 'hunk' | 'meta' | 'ctx'; text: string }[] {
  return diff.replace(/\n$/, '').split('\n').map((text) => {
    if (text.startsWith('+++') || text.startsWith('---')) return { cls: 'meta' as const, text };
    if (text.startsWith('@@')) return { cls: 'hunk' as const, text };
    if (text.startsWith('+')) return { cls: 'add' as const, text };
    if (text.startsWith('-')) return { cls: 'del' as const, text };
    return { cls: 'ctx' as const, text };
  });
}
