/**
 * The sessions "Switch Session" offers: those opened on this connection plus the ones the daemon
 * stored for this workspace (`agent-lsp sessions list --json --cwd <dir>`, one JSON object per
 * line), newest first, each once.
 */

export interface StoredSession {
  id: string;
  name?: string | null;
  cwd?: string;
  updated?: string;
  messageCount?: number;
}

export interface SessionChoice {
  id: string;
  current: boolean;
  /** Open on this connection (switch with getMessages) or only stored (resume first). */
  open: boolean;
  label: string;
  description: string;
}

/** Parses the JSON lines of `sessions list --json`; lines that are not session objects are skipped. */
export function parseSessionList(stdout: string): StoredSession[] {
  const out: StoredSession[] = [];
  for (const line of stdout.split('\n')) {
    const t = line.trim();
    if (!t.startsWith('{')) continue;
    try {
      const v = JSON.parse(t) as StoredSession;
      if (typeof v.id === 'string' && v.id !== '') out.push(v);
    } catch {
      // Not JSON: ignore (the command's output is ours, but be tolerant of log noise).
    }
  }
  return out;
}

function when(updated: string | undefined): string {
  if (!updated) return '';
  const d = new Date(updated);
  return Number.isNaN(d.getTime()) ? updated : d.toISOString().replace('T', ' ').slice(0, 16);
}

/** Connection sessions (newest last in `open`) first, then stored ones not already listed. */
export function sessionChoices(open: string[], stored: StoredSession[], current: string | undefined): SessionChoice[] {
  const byId = new Map(stored.map((s) => [s.id, s]));
  const seen = new Set<string>();
  const choices: SessionChoice[] = [];
  const add = (id: string, isOpen: boolean) => {
    if (seen.has(id)) return;
    seen.add(id);
    const s = byId.get(id);
    const count = s?.messageCount !== undefined ? `${s.messageCount} messages` : '';
    const parts = [isOpen ? 'open' : 'stored', count, when(s?.updated)].filter((p) => p !== '');
    choices.push({ id, current: id === current, open: isOpen, label: s?.name || id, description: parts.join(' · ') });
  };
  for (const id of [...open].reverse()) add(id, true);
  for (const s of stored) add(s.id, false);
  return choices;
}
