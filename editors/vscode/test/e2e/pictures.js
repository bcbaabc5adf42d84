//! README pictures taken from the real editor during the e2e run: a screenshot cropped to the
//! region that shows the feature. With UPDATE_PICTURES=1 (scripts/pictures.sh) they are written
//! to editors/vscode/media/ (committed, shown by the README); otherwise to the test artifacts, so
//! a normal run never touches the repository.
'use strict';
const fs = require('fs');
const path = require('path');

const MEDIA = path.join(__dirname, '..', '..', 'media');

/** The smallest rectangle holding every element `selectors` match (visible ones only). */
async function regionOf(page, selectors) {
  let box;
  for (const sel of selectors) {
    const b = await page.locator(sel).first().boundingBox();
    if (!b) continue;
    box = !box ? b : (() => {
      const x = Math.min(box.x, b.x), y = Math.min(box.y, b.y);
      return { x, y, width: Math.max(box.x + box.width, b.x + b.width) - x, height: Math.max(box.y + box.height, b.y + b.height) - y };
    })();
  }
  if (!box) throw new Error(`no picture region: ${selectors.join(', ')}`);
  return box;
}

/** Saves picture `name` (a file name without .png) of the region the selectors cover. */
async function picture(page, artifacts, name, selectors) {
  const update = process.env.UPDATE_PICTURES === '1';
  const dir = update ? MEDIA : artifacts;
  fs.mkdirSync(dir, { recursive: true });
  const file = path.join(dir, `${update ? '' : 'picture-'}${name}.png`);
  await page.screenshot({ path: file, clip: await regionOf(page, selectors) });
  return file;
}

module.exports = { picture };
