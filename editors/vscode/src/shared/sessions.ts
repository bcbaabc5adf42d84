/**
 * The sessions "Switch Session" offers: those opened on this connection plus the ones the daemon
 * stored for this workspace (`agent/listSessions`, protocol.md §3.12), newest first, each once,
 * each by its title (its name, else its first prompt) and its last activity, not by its id.
 */

import type { SessionInfo } from '../protocol';

export interface SessionChoice {
  id: string;
  current: boolean;
  /** Open on this connection (switch with getMessages) or only stored (resume first). */
  open: boolean;
  label: string;
  description: string;
}

/** The title a session without a stored message has yet (nothing to name it by). */
export const UNTITLED = 'New session (no messages yet)';

/** "just now", "5 minutes ago", "yesterday", "3 days ago", then the date. */
export function relativeTime(iso: string | undefined, now: number): string {
  if (!iso) return '';
  const t = new Date(iso).getTime();
  if (Number.isNaN(t)) return iso;
  const s = Math.max(0, Math.round((now - t) / 1000));
  const plural = (n: number, unit: string) => `${n} ${unit}${n === 1 ? '' : 's'} ago`;
  if (s < 45) return 'just now';
  const m = Math.round(s / 60);
  if (m < 60) return plural(m, 'minute');
  const h = Math.round(m / 60);
  if (h < 24) return plural(h, 'hour');
  const d = Math.round(h / 24);
  if (d === 1) return 'yesterday';
  if (d < 30) return plural(d, 'day');
  return new Date(t).toISOString().slice(0, 10);
}

/** Connection sessions (newest last in `open`) first, then stored ones not already listed. */
export function sessionChoices(open: string[], stored: SessionInfo[], current: string | undefined, now: number): SessionChoice[] {
  const byId = new Map(stored.map((s) => [s.sessionId, s]));
  const seen = new Set<string>();
  const choices: SessionChoice[] = [];
  const add = (id: string, isOpen: boolean) => {
    if (seen.has(id)) return;
    seen.add(id);
    const s = byId.get(id);
    const count = s ? `${s.messageCount} message${s.messageCount === 1 ? '' : 's'}` : '';
    const parts = [isOpen ? 'open' : 'stored', count, relativeTime(s?.modified, now)].filter((p) => p !== '');
    choices.push({ id, current: id === current, open: isOpen, label: s?.title || UNTITLED, description: parts.join(' · ') });
  };
  for (const id of [...open].reverse()) add(id, true);
  for (const s of stored) add(s.sessionId, false);
  return choices;
}
