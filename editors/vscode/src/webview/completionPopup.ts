/**
 * The chat input's completion popup: `/` lists the session's slash commands, `@` the workspace's
 * files (the host answers a `complete` message with `completions`). Arrow keys move, Enter or
 * Tab chooses, Escape closes; choosing inserts the command or `@path`, and a file is attached
 * as a context chip too.
 */

import { applyCompletion, type CompletionItem, type CompletionTrigger, completionTrigger } from '../shared/completion';
import { escapeHtml } from '../shared/markdown';
import type { ViewToHost } from '../shared/messages';

export class CompletionPopup {
  private trigger: CompletionTrigger | undefined;
  private items: CompletionItem[] = [];
  private selected = 0;
  private requestId = 0;

  constructor(private readonly input: HTMLTextAreaElement, private readonly el: HTMLUListElement, private readonly post: (m: ViewToHost) => void, private readonly changed: () => void) {
    el.addEventListener('mousedown', (e) => {
      const li = (e.target as HTMLElement).closest<HTMLElement>('li[data-index]');
      if (!li) return;
      e.preventDefault(); // keep the focus in the input
      this.choose(Number(li.dataset.index));
    });
  }

  get isOpen(): boolean { return !this.el.hidden; }

  /** Called after every edit or caret move in the input. */
  update(): void {
    const t = completionTrigger(this.input.value, this.input.selectionStart ?? this.input.value.length);
    const same = t && this.trigger && t.kind === this.trigger.kind && t.query === this.trigger.query && t.start === this.trigger.start;
    this.trigger = t;
    if (!t) { this.hide(); return; }
    if (same) return;
    this.requestId++;
    this.post({ type: 'complete', requestId: this.requestId, kind: t.kind, query: t.query });
  }

  receive(requestId: number, items: CompletionItem[]): void {
    if (requestId !== this.requestId || !this.trigger) return;
    this.items = items;
    this.selected = 0;
    if (items.length === 0) { this.hide(); return; }
    this.render();
  }

  /** Handles a key while the popup is open; true when it took the key. */
  handleKey(e: KeyboardEvent): boolean {
    if (!this.isOpen) return false;
    switch (e.key) {
      case 'ArrowDown': this.move(1); return true;
      case 'ArrowUp': this.move(-1); return true;
      case 'Enter': case 'Tab':
        if (e.shiftKey) return false;
        this.choose(this.selected); return true;
      case 'Escape': this.hide(); this.trigger = undefined; return true;
      default: return false;
    }
  }

  private move(by: number): void {
    this.selected = (this.selected + by + this.items.length) % this.items.length;
    this.render();
  }

  private choose(index: number): void {
    const item = this.items[index];
    const t = this.trigger;
    if (!item || !t) return;
    const { text, caret } = applyCompletion(this.input.value, t, item.insert);
    this.input.value = text;
    this.input.setSelectionRange(caret, caret);
    if (t.kind === 'file') this.post({ type: 'attachFile', path: item.label });
    this.trigger = undefined;
    this.hide();
    this.changed();
    this.input.focus();
  }

  private render(): void {
    this.el.hidden = false;
    this.el.innerHTML = this.items.map((it, i) => `<li data-index="${i}" class="${i === this.selected ? 'selected' : ''}" role="option" aria-selected="${i === this.selected}">`
      + `<span class="c-label">${escapeHtml(it.label)}</span>${it.hint ? `<span class="c-hint">${escapeHtml(it.hint)}</span>` : ''}`
      + `${it.detail ? `<span class="c-detail">${escapeHtml(it.detail)}</span>` : ''}</li>`).join('');
    this.el.querySelector('li.selected')?.scrollIntoView({ block: 'nearest' });
  }

  hide(): void {
    this.el.hidden = true;
    this.el.innerHTML = '';
    this.items = [];
  }
}
