// Build: `npm ci && npm run build` (or `make web` from the repository root) writes the page into
// ../jaxjudge/service/static, which is committed so that a Python-only install serves it. The output is
// deterministic: tests/test_web.py rebuilds into a temporary folder and compares byte for byte.
import { defineConfig } from 'vite';

// KaTeX's stylesheet lists each font as woff2, woff and ttf. Every browser that runs this page
// reads woff2, so drop the other two formats: 60 font files become 20 (~300 KB).
function katexWoff2Only() {
  return {
    name: 'katex-woff2-only',
    enforce: 'pre',
    transform(code, id) {
      if (!/katex(\.min)?\.css$/.test(id)) return null;
      return code.replace(/,\s*url\([^)]*\.(woff|ttf)\)\s*format\("(woff|truetype)"\)/g, '');
    },
  };
}

export default defineConfig({
  base: '/',
  plugins: [katexWoff2Only()],
  build: {
    outDir: '../jaxjudge/service/static',
    emptyOutDir: true,
    assetsDir: 'assets',
    // No data: URLs: every asset is a file under /assets, which the CSP allows.
    assetsInlineLimit: 0,
    sourcemap: false,
    target: 'es2020',
    chunkSizeWarningLimit: 1200,
    modulePreload: { polyfill: false },
    reportCompressedSize: false,
  },
});
