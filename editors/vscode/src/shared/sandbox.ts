/**
 * The command sandbox in words (protocol.md §3.17): what an approval card says about a `bash`
 * call (`agent/beforeToolCall.sandbox`, §4.2: how it runs, the network allowlist, the layers it
 * runs in and what is not isolated here), the status of a session's sandbox
 * (`agent/getState.sandbox`, §3.6) for "Agent: Show Sandbox Status" and the chat footer, and the
 * `sandboxNetwork` setting checked as the daemon checks it. Pure: unit-tested.
 */

import type { ApprovalSandbox, SandboxNetwork, SandboxStatus } from '../protocol';

/** What sandboxed commands reach: none, everything, or the allowlist's hosts. */
export function networkWords(network: boolean, allowedDomains: string[] | undefined): string {
  if (allowedDomains) {
    return allowedDomains.length > 0 ? `network only to ${allowedDomains.join(', ')}` : 'no network (the allowlist names no host)';
  }
  return network ? 'full network' : 'no network';
}

/** Where a sandboxed command may write, under its mode. */
function writeWhere(mode: SandboxStatus['mode']): string {
  return mode === 'readOnly' ? 'nowhere but its temporary directory'
    : 'only inside the workspace (not its protected paths, such as .git) and its temporary directory';
}

/** How an approved command runs, as the approval says it (undefined when nothing to say). */
export function sandboxNote(s: ApprovalSandbox | undefined): string | undefined {
  if (!s) return undefined;
  if (s.justification !== undefined) return `Runs outside the sandbox, with your full rights. The agent says: ${s.justification}`;
  if (s.unavailable !== undefined) return `The sandbox is unavailable (${s.unavailable}): runs with your full rights.`;
  if (!s.sandboxed) return 'Runs with your full rights (no sandbox).';
  const network = s.mode === 'readOnly' ? 'no network' : networkWords(s.network, s.allowedDomains);
  return `Sandboxed: writes ${writeWhere(s.mode)}; ${network}.`;
}

/** What a command that runs sandboxed is not kept from on this machine (empty: nothing). */
export function sandboxGaps(s: ApprovalSandbox | undefined): string[] {
  if (!s?.sandboxed) return [];
  return (s.notIsolated ?? []).filter((g) => typeof g === 'string' && g !== '');
}

/** The layers a command that runs sandboxed gets here, as the approval names them (empty: none said). */
export function sandboxLayers(s: ApprovalSandbox | undefined): string[] {
  if (!s?.sandboxed) return [];
  return (s.layers ?? []).filter((l) => typeof l === 'string' && l !== '');
}

/** Heading of the gaps' list, on a card and in the status. */
export const NOT_ISOLATED = 'Not isolated here:';

/** The approval's sandbox text in one line (a notification has no room for a list). */
export function sandboxNoteLine(s: ApprovalSandbox | undefined): string | undefined {
  const note = sandboxNote(s);
  const layers = sandboxLayers(s);
  const gaps = sandboxGaps(s);
  if (!note) return undefined;
  return `${note}${layers.length > 0 ? ` Layers: ${layers.join(', ')}.` : ''}${gaps.length > 0 ? ` ${NOT_ISOLATED} ${gaps.join('; ')}.` : ''}`;
}

function layerState(l: { available: boolean; active: boolean; reason?: string } | undefined, details = ''): string {
  if (!l) return 'not reported';
  if (!l.available) return `unavailable${l.reason ? ` (${l.reason})` : ''}`;
  return `${l.active ? 'active' : 'available, not used now'}${details}`;
}

/** `agent/getState.sandbox` as lines: mode, network, every layer, the gaps and refused hosts. */
export function sandboxStatusLines(s: SandboxStatus): string[] {
  const lines: string[] = [];
  if (!s.available) lines.push(`Unavailable on this machine${s.reason ? `: ${s.reason}` : ''}. A command that would run sandboxed asks you first.`);
  if (s.mode === 'off') {
    lines.push(`Mode: off${s.explicit ? ' (set)' : ''}: commands run with your full rights.`);
  } else {
    lines.push(s.explicit ? `Mode: ${s.mode} (set), for every command, those you approve too.`
      : `Mode: ${s.mode} (the default), for the commands that run without asking; those you approve by hand run with your rights.`);
    lines.push(`Writes: ${writeWhere(s.mode)}.`);
    const d = s.allowedDomains;
    lines.push(`Network: ${s.mode === 'readOnly' ? 'none' : d ? (d.length > 0 ? `only ${d.join(', ')}, through the daemon's proxy` : 'none (the allowlist names no host)') : s.network ? 'full (yours)' : 'none'}.`);
  }
  const l = s.layers;
  if (l) {
    const ll = l.landlock;
    const features = ll && ll.available ? [ll.ioctlDev ? 'device ioctls refused' : '', ll.scopes ? 'signals and abstract sockets kept inside' : ''].filter((f) => f !== '') : [];
    lines.push(`Landlock${ll?.abi !== undefined ? ` ABI ${ll.abi}` : ''}: ${layerState(ll, features.length ? ` (${features.join(', ')})` : '')}.`);
    const ns = l.namespaces;
    lines.push(`Namespaces: ${layerState(ns, ns?.active && ns.kinds?.length ? ` (${ns.kinds.join(', ')})` : '')}.`);
    lines.push(`seccomp: ${layerState(l.seccomp, l.seccomp?.active ? ' (Unix sockets, io_uring, keyrings refused)' : '')}.`);
    const p = l.proxy;
    lines.push(`Allowlist proxy: ${!p ? 'not reported' : p.active ? 'active' : p.available ? 'available, not used (no allowlist)' : 'unavailable (it needs namespaces)'}.`);
  }
  if (s.notIsolated) { // (an older daemon does not say)
    const gaps = s.notIsolated.filter((g) => g !== '');
    lines.push(gaps.length > 0 ? NOT_ISOLATED : `${NOT_ISOLATED} nothing (every layer is in place).`);
    for (const g of gaps) lines.push(`  • ${g}`);
  }
  if (s.refusedHosts && s.refusedHosts.length > 0) lines.push(`Refused by the allowlist: ${s.refusedHosts.join(', ')}.`);
  return lines;
}

/** The chat footer's short form, e.g. `sandbox: workspaceWrite · no network`. */
export function sandboxSummary(s: SandboxStatus): { text: string; warn: boolean } {
  if (!s.available && s.mode !== 'off') return { text: 'sandbox: unavailable', warn: true };
  if (s.mode === 'off') return { text: 'sandbox: off', warn: true };
  const net = s.mode === 'readOnly' ? 'no network'
    : s.allowedDomains ? (s.allowedDomains.length > 0 ? `network: ${s.allowedDomains.join(', ')}` : 'no network') : s.network ? 'network' : 'no network';
  const gaps = (s.notIsolated ?? []).length;
  return { text: `sandbox: ${s.mode}${s.explicit ? '' : ' (default)'} · ${net}${gaps > 0 ? ` · ${gaps} not isolated` : ''}`, warn: gaps > 0 };
}

/** A domain as the daemon's allowlist takes it (`src/sandbox/policy.rs` normalize_domain), or undefined. */
export function normalizeDomain(domain: string): string | undefined {
  const d = domain.trim().replace(/\.+$/, '').toLowerCase();
  const bare = d.startsWith('*.') ? d.slice(2) : d;
  return bare !== '' && /^[a-z0-9.-]+$/.test(bare) ? d : undefined;
}

/**
 * The `sandboxNetwork` setting as sent: `true`, or the valid domains of a list. A malformed
 * entry is left out and named in `problems` (the daemon would otherwise ignore every
 * initialization option, the approval policy and the sandbox mode included); `false`, unset or
 * a wrong type send nothing (the daemon's default: no network).
 */
export function sandboxNetworkOption(value: unknown): { value?: SandboxNetwork; problems: string[] } {
  if (value === true) return { value: true, problems: [] };
  if (Array.isArray(value)) {
    const problems: string[] = [];
    const domains: string[] = [];
    for (const item of value) {
      const d = typeof item === 'string' ? normalizeDomain(item) : undefined;
      if (d === undefined) problems.push(`${JSON.stringify(item)} is not a domain (letters, digits, '-', '.', an optional '*.' prefix): left out`);
      else domains.push(d);
    }
    return { value: domains, problems };
  }
  if (value === false || value === undefined || value === null) return { problems: [] };
  return { problems: [`${JSON.stringify(value)} is neither true, false nor a list of domains: no network`] };
}
