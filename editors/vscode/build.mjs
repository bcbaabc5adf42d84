//! Bundles the extension (Node, CommonJS, `vscode` external) and the chat webview (browser IIFE)
//! with esbuild; `--tests` also bundles the unit tests into out/test/unit for `node --test`.
import * as esbuild from 'esbuild';
import { readdirSync } from 'node:fs';

const common = { bundle: true, sourcemap: true, logLevel: 'warning', target: 'es2022' };
await esbuild.build({ ...common, entryPoints: ['src/extension.ts'], outfile: 'dist/extension.js', platform: 'node', format: 'cjs', external: ['vscode'] });
await esbuild.build({ ...common, entryPoints: ['src/webview/main.ts'], outfile: 'dist/webview.js', platform: 'browser', format: 'iife' });
if (process.argv.includes('--tests')) {
  const tests = readdirSync('test/unit').filter((f) => f.endsWith('.test.ts')).map((f) => `test/unit/${f}`);
  await esbuild.build({ ...common, entryPoints: tests, outdir: 'out/test/unit', platform: 'node', format: 'cjs', external: ['vscode'] });
}
