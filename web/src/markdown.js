// Problem statements: CommonMark + tables through markdown-it with raw HTML off, and TeX math
// ($...$ inline, $$...$$ display) typeset by KaTeX (HTML for the eye, MathML for screen readers).
import katex from 'katex';
import MarkdownIt from 'markdown-it';
import 'katex/dist/katex.min.css';

function tex(source, displayMode) {
  return katex.renderToString(source, {
    displayMode,
    throwOnError: false, // a typo in a statement shows the TeX in red, not a blank page
    output: 'htmlAndMathml',
    trust: false,
    strict: 'ignore',
  });
}

function mathInline(state, silent) {
  const { src, pos } = state;
  if (src.charCodeAt(pos) !== 0x24 /* $ */) return false;
  const display = src.charCodeAt(pos + 1) === 0x24;
  const fence = display ? '$$' : '$';
  const start = pos + fence.length;
  let end = start;
  for (;;) {
    end = src.indexOf(fence, end);
    if (end === -1) return false;
    if (src.charCodeAt(end - 1) !== 0x5c /* \ */) break;
    end += 1;
  }
  const content = src.slice(start, end);
  if (!content.trim()) return false;
  // Pandoc's rule for single dollars, so that "costs $5 and $6" stays text.
  if (!display && (/^\s|\s$/.test(content) || /[0-9]/.test(src[end + 1] ?? ''))) return false;
  if (!silent) {
    const token = state.push(display ? 'math_display' : 'math_inline', 'math', 0);
    token.content = content;
    token.markup = fence;
  }
  state.pos = end + fence.length;
  return true;
}

function mathBlock(state, startLine, endLine, silent) {
  const begin = state.bMarks[startLine] + state.tShift[startLine];
  if (state.sCount[startLine] - state.blkIndent >= 4) return false;
  if (state.src.slice(begin, begin + 2) !== '$$') return false;
  const first = state.src.slice(begin + 2, state.eMarks[startLine]).trim();
  const lines = [];
  let line = startLine;
  if (first.endsWith('$$')) {
    lines.push(first.slice(0, -2));
  } else {
    lines.push(first);
    for (line = startLine + 1; line < endLine; line += 1) {
      const text = state.src
        .slice(state.bMarks[line] + state.tShift[line], state.eMarks[line])
        .trim();
      if (text.endsWith('$$')) {
        lines.push(text.slice(0, -2));
        break;
      }
      lines.push(text);
    }
    if (line >= endLine) return false;
  }
  if (silent) return true;
  state.line = line + 1;
  const token = state.push('math_block', 'math', 0);
  token.block = true;
  token.content = lines.join('\n').trim();
  token.map = [startLine, state.line];
  return true;
}

const md = new MarkdownIt({ html: false, linkify: false, typographer: false });
md.inline.ruler.after('escape', 'math_inline', mathInline);
md.block.ruler.after('blockquote', 'math_block', mathBlock, {
  alt: ['paragraph', 'reference', 'blockquote', 'list'],
});
md.renderer.rules.math_inline = (tokens, i) => tex(tokens[i].content, false);
md.renderer.rules.math_display = (tokens, i) =>
  `<span class="math-display scroll-box">${tex(tokens[i].content, true)}</span>`;
md.renderer.rules.math_block = (tokens, i) =>
  `<div class="math-display scroll-box">${tex(tokens[i].content, true)}</div>\n`;
md.renderer.rules.table_open = () => '<div class="scroll-box" role="region" aria-label="Table"><table>\n';
md.renderer.rules.table_close = () => '</table></div>\n';
const defaultFence = md.renderer.rules.fence;
md.renderer.rules.fence = (tokens, i, options, env, self) =>
  defaultFence(tokens, i, options, env, self).replace(/^<pre>/, '<pre class="scroll-box">');

/**
 * The statement as HTML. A leading "# Title" is dropped (the page shows the title as its h1)
 * and any other h1 becomes an h2, so the page keeps a single h1.
 */
export function renderStatement(markdown) {
  const tokens = md.parse(markdown, {});
  if (tokens[0]?.type === 'heading_open' && tokens[0].tag === 'h1') tokens.splice(0, 3);
  for (const token of tokens) {
    if (token.type === 'heading_open' || token.type === 'heading_close') {
      token.tag = `h${Math.max(Number(token.tag.slice(1)), 2)}`;
    }
  }
  return md.renderer.render(tokens, md.options, {});
}
