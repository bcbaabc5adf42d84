//! The run review: before-images rebuilt from agent/runChanges' diffs, and the words shown.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { beforeFromDiff, changeDescription, conflictQuestion, DiffApplyError, revertSummary } from '../../src/shared/changes';

test('the before side is the diff applied backwards to the text now', () => {
  const now = 'one\nTWO\nthree\nfour\nfive\nsix\nseven\neight\nnine\nten\nELEVEN\n';
  const diff = '--- /p/a.txt\n+++ /p/a.txt\n@@ -1,5 +1,5 @@\n one\n-two\n+TWO\n three\n four\n five\n@@ -8,4 +8,4 @@\n eight\n nine\n ten\n-eleven\n+ELEVEN\n';
  assert.equal(beforeFromDiff(diff, now), 'one\ntwo\nthree\nfour\nfive\nsix\nseven\neight\nnine\nten\neleven\n');
});

test('created and deleted files: the before side is empty, or all of the diff', () => {
  assert.equal(beforeFromDiff('--- /p/m.txt\n+++ /p/m.txt\n@@ -0,0 +1,2 @@\n+made\n+here\n', 'made\nhere\n'), '');
  assert.equal(beforeFromDiff('--- /p/d.txt\n+++ /p/d.txt\n@@ -1,2 +0,0 @@\n-was\n-here\n', ''), 'was\nhere\n');
});

test('a missing newline at the end of either side is kept', () => {
  assert.equal(beforeFromDiff('@@ -1 +1 @@\n-a\n\\ No newline at end of file\n+b\n', 'b\n'), 'a');
  assert.equal(beforeFromDiff('@@ -1 +1 @@\n-a\n+b\n\\ No newline at end of file\n', 'b'), 'a\n');
  assert.equal(beforeFromDiff('@@ -1 +1 @@\n-a\n\\ No newline at end of file\n+b\n\\ No newline at end of file\n', 'b'), 'a');
  assert.equal(beforeFromDiff('@@ -1,2 +1,2 @@\n-a\n+A\n b\n\\ No newline at end of file\n', 'A\nb'), 'a\nb');
});

test('a diff that does not fit the text now is refused', () => {
  assert.throws(() => beforeFromDiff('@@ -1 +1 @@\n-a\n+b\n', 'c\n'), DiffApplyError);
});

test('the Changes view and the revert notifications say what happened in words', () => {
  const rel = (p: string) => p.replace('/p/', '');
  const c = { path: '/p/big.bin', change: 'modified' as const, diff: '', userChanged: true, revertible: false, reason: 'the file is larger than 1 MiB' };
  assert.equal(changeDescription(c, 'src'), 'src · modified · changed since · not revertible');
  assert.equal(changeDescription({ ...c, userChanged: false, revertible: true }, ''), 'modified');
  const r = { reverted: ['/p/a.txt'], conflicts: [{ path: '/p/b.txt', reason: 'changed since the agent changed it' }], skipped: [{ path: '/p/big.bin', reason: 'too large' }] };
  assert.equal(revertSummary(r, rel), 'Reverted a.txt. Skipped big.bin (too large).');
  assert.equal(conflictQuestion(r, rel), 'Changed since the agent changed them: b.txt (changed since the agent changed it). Revert them anyway?');
  assert.equal(revertSummary({ reverted: [], conflicts: [], skipped: [] }, rel), 'Nothing to revert.');
});
