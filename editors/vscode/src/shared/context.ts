/**
 * Context blocks added from the editor ("Add Selection to Prompt", "Add File to Prompt"): each
 * becomes a text content block that names the file and the 1-based line range, so the model can
 * refer to it and read around it. The chat view shows them as chips.
 */

import type { ContentBlock } from '../protocol';

export interface ContextItem {
  /** Workspace-relative path when possible, absolute otherwise. */
  path: string;
  /** 1-based inclusive line range; absent for a whole file. */
  startLine?: number;
  endLine?: number;
  text: string;
  languageId?: string;
  /** A pasted or dropped image: sent as an image block (`text` is then unused). */
  image?: { mimeType: string; data: string };
}

export function contextLabel(c: ContextItem): string {
  if (c.image) return `image: ${c.path} (${imageSize(c.image.data)})`;
  if (c.startLine === undefined) return c.path;
  return c.startLine === c.endLine ? `${c.path}:${c.startLine}` : `${c.path}:${c.startLine}-${c.endLine}`;
}

/** The decoded size of base64 data, in words. */
export function imageSize(base64: string): string {
  const bytes = Math.floor((base64.replace(/=+$/, '').length * 3) / 4);
  return bytes < 1024 ? `${bytes} B` : `${Math.round(bytes / 1024)} KB`;
}

export function contextBlock(c: ContextItem): ContentBlock {
  if (c.image) return { type: 'image', mimeType: c.image.mimeType, data: c.image.data };
  const lines = c.startLine === undefined ? '' : ` lines="${c.startLine}-${c.endLine}"`;
  const fence = c.text.includes('```') ? '````' : '```';
  const body = c.text.endsWith('\n') ? c.text : `${c.text}\n`;
  return { type: 'text', text: `<context path="${c.path}"${lines}>\n${fence}${c.languageId ?? ''}\n${body}${fence}\n</context>` };
}

/** The prompt message: plain text when there is no context, else context blocks then the text. */
export function buildMessage(text: string, contexts: ContextItem[]): string | ContentBlock[] {
  if (contexts.length === 0) return text;
  return [...contexts.map(contextBlock), { type: 'text', text }];
}

/** Converts a 0-based VS Code selection to the 1-based inclusive lines shown to the model. */
export function selectionLines(startLine0: number, endLine0: number, endCharacter: number): { startLine: number; endLine: number } {
  // A selection ending at column 0 of a line does not include that line.
  const end = endLine0 > startLine0 && endCharacter === 0 ? endLine0 - 1 : endLine0;
  return { startLine: startLine0 + 1, endLine: end + 1 };
}
