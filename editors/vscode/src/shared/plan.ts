/**
 * The model's plan (`todo_write`, protocol.md §3.18) as the checklist above the chat: one line
 * per item with its mark, and the count of completed items in the title. Pure, so it is
 * unit-tested; every item's text goes through `escapeHtml`.
 */

import type { TodoItem, TodoStatus } from '../protocol';
import { escapeHtml } from './markdown';

/** The mark of each status, and the words a screen reader says for it. */
const MARKS: Record<TodoStatus, { mark: string; label: string }> = {
  completed: { mark: '✓', label: 'done' },
  in_progress: { mark: '▸', label: 'in progress' },
  pending: { mark: '○', label: 'pending' },
};

/** "2/5": completed items of all. */
export function planCount(todos: TodoItem[]): string {
  return `${todos.filter((t) => t.status === 'completed').length}/${todos.length}`;
}

/**
 * The checklist's HTML; empty when there is no plan (the view then hides it). `open` says
 * whether it is unfolded: the user can fold it away, a long plan would push the chat down.
 */
export function renderPlan(todos: TodoItem[], open: boolean): string {
  if (todos.length === 0) return '';
  const rows = todos.map((t) => {
    const m = MARKS[t.status] ?? MARKS.pending;
    return `<li class="todo status-${t.status}"><span class="mark" role="img" aria-label="${m.label}">${m.mark}</span><span class="todo-text">${escapeHtml(t.content)}</span></li>`;
  }).join('');
  return `<details class="plan-fold" data-fold="plan"${open ? ' open' : ''}><summary><span class="plan-title">Plan</span> <span class="plan-count" title="Completed items of all">${planCount(todos)}</span></summary><ul class="todos">${rows}</ul></details>`;
}
