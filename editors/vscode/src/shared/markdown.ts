/**
 * A small, safe Markdown renderer for the chat view: everything is HTML-escaped first, then a
 * fixed set of constructs (fenced code, headings, lists, quotes, emphasis, inline code, links) is
 * turned into tags. No raw HTML from the model ever reaches the webview.
 *
 * It tolerates half-streamed input (an unclosed code fence renders as code so far).
 */

export function escapeHtml(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;').replace(/'/g, '&#39;');
}

/** Inline markup on one already-escaped line of text. */
function inline(escaped: string): string {
  // Inline code first, protected from the other rules by placeholders.
  const codes: string[] = [];
  let s = escaped.replace(/`([^`]+)`/g, (_m, c: string) => { codes.push(c); return `\u0000${codes.length - 1}\u0000`; });
  s = s.replace(/\[([^\]]+)\]\((https?:\/\/[^)\s]+)\)/g, (_m, text: string, url: string) => `<a href="${url}">${text}</a>`);
  s = s.replace(/\*\*([^*]+)\*\*/g, '<strong>$1</strong>');
  s = s.replace(/(^|[^*\w])\*([^*\s][^*]*)\*(?!\w)/g, '$1<em>$2</em>');
  s = s.replace(/(^|\W)_([^_\s][^_]*)_(?!\w)/g, '$1<em>$2</em>');
  s = s.replace(/~~([^~]+)~~/g, '<del>$1</del>');
  return s.replace(/\u0000(\d+)\u0000/g, (_m, i: string) => `<code>${codes[Number(i)]}</code>`);
}

type Block = { kind: 'p' | 'ul' | 'ol' | 'quote'; lines: string[] };

export function renderMarkdown(src: string): string {
  const lines = src.replace(/\r\n?/g, '\n').split('\n');
  const out: string[] = [];
  let block: Block | undefined;
  const flush = () => {
    if (!block) return;
    if (block.kind === 'p') out.push(`<p>${block.lines.map((l) => inline(escapeHtml(l))).join('<br>')}</p>`);
    else if (block.kind === 'quote') out.push(`<blockquote>${block.lines.map((l) => inline(escapeHtml(l))).join('<br>')}</blockquote>`);
    else out.push(`<${block.kind}>${block.lines.map((l) => `<li>${inline(escapeHtml(l))}</li>`).join('')}</${block.kind}>`);
    block = undefined;
  };
  const add = (kind: Block['kind'], line: string) => {
    if (block && block.kind !== kind) flush();
    if (!block) block = { kind, lines: [] };
    block.lines.push(line);
  };
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    const fence = /^\s*(```+|~~~+)\s*([\w+#.-]*)\s*$/.exec(line);
    if (fence) {
      flush();
      const body: string[] = [];
      let j = i + 1;
      while (j < lines.length && !lines[j].trim().startsWith(fence[1])) body.push(lines[j++]);
      const lang = fence[2] ? ` data-lang="${escapeHtml(fence[2])}"` : '';
      out.push(`<pre class="code"${lang}><code>${escapeHtml(body.join('\n'))}</code></pre>`);
      i = j;
      continue;
    }
    const heading = /^(#{1,6})\s+(.*)$/.exec(line);
    if (heading) { flush(); const n = Math.min(heading[1].length + 2, 6); out.push(`<h${n}>${inline(escapeHtml(heading[2]))}</h${n}>`); continue; }
    if (/^\s*([-*_])(\s*\1){2,}\s*$/.test(line)) { flush(); out.push('<hr>'); continue; }
    const ul = /^\s*[-*+]\s+(.*)$/.exec(line);
    if (ul) { add('ul', ul[1]); continue; }
    const ol = /^\s*\d+[.)]\s+(.*)$/.exec(line);
    if (ol) { add('ol', ol[1]); continue; }
    const quote = /^\s*>\s?(.*)$/.exec(line);
    if (quote) { add('quote', quote[1]); continue; }
    if (line.trim() === '') { flush(); continue; }
    add('p', line);
  }
  flush();
  return out.join('');
}
