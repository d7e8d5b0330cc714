// Compare an attempt with the draft: a modal with @codemirror/merge's diff, the attempt on the
// left and the draft on the right (both read-only here: the draft is edited in the editor),
// changed lines highlighted and unchanged runs collapsed. Narrow screens get the unified view
// (the draft, with the attempt's lines it no longer has shown inline). Loaded on first use, so
// the problem page does not carry the diff code.
import { Chunk, MergeView, unifiedMergeView } from '@codemirror/merge';
import { EditorState, Text } from '@codemirror/state';
import { EditorView } from '@codemirror/view';
import { h, modal, newId } from './dom.js';
import { viewerExtensions } from './editor.js';

const NARROW = '(max-width: 47.99rem)';
const COLLAPSE = { margin: 2, minSize: 4 };
const LISTED = 4; // places named in the summary; the rest are counted
// The collapsed-run marker's text (the package frames it with a glyph few fonts have).
const PHRASES = EditorState.phrases.of({ '$ unchanged lines': '$ unchanged lines (click to show)' });

function doc(text) {
  return Text.of(text.split('\n'));
}

function lineRange(text, from, to) {
  if (to <= from) return null;
  const first = text.lineAt(Math.min(from, text.length)).number;
  const last = text.lineAt(Math.min(Math.max(from, to - 1), text.length)).number;
  return first === last ? `line ${first}` : `lines ${first}–${last}`;
}

/** Where the two differ, in words (the colours are not the only way to tell). */
export function diffSummary(attempt, draft) {
  const a = doc(attempt);
  const b = doc(draft);
  const chunks = Chunk.build(a, b);
  if (!chunks.length) return 'Same as the code in the editor.';
  const places = chunks.slice(0, LISTED).map((c) => {
    const left = lineRange(a, c.fromA, c.toA);
    const right = lineRange(b, c.fromB, c.toB);
    if (!left) return `draft ${right} added`;
    if (!right) return `attempt ${left} removed`;
    return `attempt ${left} → draft ${right}`;
  });
  const more = chunks.length > LISTED ? `, and ${chunks.length - LISTED} more` : '';
  const count = chunks.length === 1 ? '1 place' : `${chunks.length} places`;
  return `Differs in ${count}: ${places.join('; ')}${more}.`;
}

function buildView(parent, { attempt, draft, split, collapse }) {
  const collapseUnchanged = collapse ? COLLAPSE : undefined;
  if (split) {
    return new MergeView({
      parent,
      a: { doc: attempt, extensions: [viewerExtensions('This attempt (read-only)'), PHRASES] },
      b: { doc: draft, extensions: [viewerExtensions('Your draft (read-only here)'), PHRASES] },
      collapseUnchanged,
    });
  }
  return new EditorView({
    parent,
    doc: draft,
    extensions: [
      viewerExtensions('Your draft, with the lines of this attempt it no longer has (read-only)'),
      PHRASES,
      EditorView.lineWrapping, // a phone: wrap long lines rather than scroll sideways
      unifiedMergeView({ original: attempt, mergeControls: false, collapseUnchanged }),
    ],
  });
}

/**
 * The diff of `attempt` (left) against `draft` (right) in a modal. Resolves 'restore' when the
 * learner asks to restore the attempt, '' when closed (Close or Escape).
 */
export function openDiff({ attempt, draft, about }) {
  const titleId = newId('diff-title');
  const media = window.matchMedia(NARROW);
  const body = h('div', { class: 'diff-body' });
  const heads = h(
    'div',
    { class: 'diff-heads', 'aria-hidden': 'true' },
    h('span', {}, 'This attempt (read-only)'),
    h('span', {}, 'Your draft'),
  );
  const legend = h('p', { class: 'muted hint diff-legend' },
    'Your draft, with the lines of this attempt it no longer has shown above the lines that replaced them.');
  const expand = h('button', { type: 'button', class: 'secondary', 'aria-pressed': 'false' }, 'Show all lines');
  const close = h('button', { type: 'submit', value: '' }, 'Close');
  const dialog = h(
    'dialog',
    { class: 'dialog diff-dialog', 'aria-labelledby': titleId },
    h(
      'form',
      { method: 'dialog' },
      h('h2', { id: titleId }, 'Compare this attempt with your draft'),
      h('p', { class: 'muted' }, about),
      h('p', { class: 'diff-summary' }, diffSummary(attempt, draft)),
      heads,
      legend,
      body,
      h(
        'div',
        { class: 'actions' },
        expand,
        h('button', { type: 'submit', value: 'restore', class: 'primary' }, 'Restore this attempt'),
        close,
      ),
    ),
  );

  let view = null;
  function render() {
    view?.destroy();
    body.replaceChildren();
    const split = !media.matches;
    heads.hidden = !split;
    legend.hidden = split;
    dialog.dataset.layout = split ? 'split' : 'unified';
    view = buildView(body, { attempt, draft, split, collapse: expand.getAttribute('aria-pressed') !== 'true' });
  }
  expand.addEventListener('click', () => {
    expand.setAttribute('aria-pressed', String(expand.getAttribute('aria-pressed') !== 'true'));
    render();
  });
  media.addEventListener('change', render);
  const closed = modal(dialog, { focus: close });
  render(); // in the document now, so the views can measure themselves
  return closed.finally(() => {
    media.removeEventListener('change', render);
    view?.destroy();
  });
}
