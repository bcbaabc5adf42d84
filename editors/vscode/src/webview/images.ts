/**
 * Images pasted or dropped into the chat input become image attachments (the host sends them
 * as image content blocks, protocol.md §3 `Message`). Other pasted content is left to the input.
 */

import type { ViewToHost } from '../shared/messages';

function imageFiles(list: DataTransfer | null): File[] {
  if (!list) return [];
  const files = Array.from(list.files ?? []);
  const fromItems = Array.from(list.items ?? []).filter((i) => i.kind === 'file').map((i) => i.getAsFile()).filter((f): f is File => f !== null);
  const all = files.length ? files : fromItems;
  return all.filter((f) => f.type.startsWith('image/'));
}

function send(file: File, post: (m: ViewToHost) => void): void {
  const reader = new FileReader();
  reader.onload = () => {
    const url = String(reader.result ?? '');
    const comma = url.indexOf(',');
    if (comma < 0) return;
    post({ type: 'attachImage', name: file.name || `pasted.${file.type.split('/')[1] ?? 'png'}`, mimeType: file.type, data: url.slice(comma + 1) });
  };
  reader.readAsDataURL(file);
}

export function acceptImages(input: HTMLTextAreaElement, dropZone: HTMLElement, post: (m: ViewToHost) => void): void {
  input.addEventListener('paste', (e) => {
    const images = imageFiles(e.clipboardData);
    if (images.length === 0) return;
    e.preventDefault();
    for (const f of images) send(f, post);
  });
  dropZone.addEventListener('dragover', (e) => {
    if (!Array.from(e.dataTransfer?.items ?? []).some((i) => i.kind === 'file')) return;
    e.preventDefault();
    dropZone.classList.add('dragover');
  });
  dropZone.addEventListener('dragleave', () => dropZone.classList.remove('dragover'));
  dropZone.addEventListener('drop', (e) => {
    dropZone.classList.remove('dragover');
    const images = imageFiles(e.dataTransfer);
    if (images.length === 0) return;
    e.preventDefault();
    for (const f of images) send(f, post);
  });
}
