// "My attempts" on a problem page: this learner's own submissions (the API's mine=true: the
// bearer token, or this browser's identity cookie), with verdict, score and time; an attempt's
// source (which the API returns to its owner only) can be compared with the editor and restored.
import { api } from './api.js';
import { confirmDialog, h, isAbort } from './dom.js';
import { formatScore, verdictBadge } from './report.js';

const LIMIT = 10;

/** Lines only in `a` and only in `b` (as multisets): a short "how far apart" for a learner. */
export function lineDiff(a, b) {
  const count = (text) => {
    const m = new Map();
    for (const line of text.split('\n')) m.set(line, (m.get(line) ?? 0) + 1);
    return m;
  };
  const ca = count(a);
  const cb = count(b);
  let onlyA = 0;
  let onlyB = 0;
  for (const [line, n] of ca) onlyA += Math.max(0, n - (cb.get(line) ?? 0));
  for (const [line, n] of cb) onlyB += Math.max(0, n - (ca.get(line) ?? 0));
  return { onlyA, onlyB };
}

function when(iso) {
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? String(iso) : date.toLocaleString();
}

export function attemptsSection({ problemId, signal, editorText, restore }) {
  const list = h('ol', { class: 'attempts-list' });
  const note = h('p', { class: 'muted attempts-note', role: 'status' });
  const section = h(
    'section',
    { class: 'attempts', 'aria-labelledby': 'attempts-h' },
    h('h2', { id: 'attempts-h' }, 'My attempts'),
    note,
    list,
  );

  async function compare(sub, out) {
    const full = await api(`/v1/submissions/${encodeURIComponent(sub.id)}`, { signal });
    if (typeof full.source !== 'string') {
      out.textContent = 'Its source is not available to you.';
      return null;
    }
    const { onlyA, onlyB } = lineDiff(full.source, editorText());
    out.textContent = onlyA || onlyB
      ? `Differs from the editor: ${onlyA} line(s) only in this attempt, ${onlyB} only in the editor.`
      : 'Same as the code in the editor.';
    return full.source;
  }

  function item(sub) {
    const out = h('span', { class: 'muted attempt-diff', 'aria-live': 'polite' });
    const compareButton = h('button', { type: 'button', class: 'secondary' }, 'Compare');
    const restoreButton = h('button', { type: 'button', class: 'secondary' }, 'Restore');
    compareButton.addEventListener('click', () => compare(sub, out).catch((e) => { if (!isAbort(e)) out.textContent = e.message; }));
    restoreButton.addEventListener('click', async () => {
      try {
        const source = await compare(sub, out);
        if (source === null) return;
        const ok = await confirmDialog({
          title: 'Restore this attempt?',
          body: 'The code in the editor, and the draft saved in this browser, will be replaced by this attempt.',
          confirm: 'Restore',
          cancel: 'Keep my code',
        });
        if (ok) restore(source);
        else restoreButton.focus();
      } catch (e) {
        if (!isAbort(e)) out.textContent = e.message;
      }
    });
    return h(
      'li',
      { class: 'attempt', 'data-submission': sub.id, 'data-verdict': sub.verdict ?? '' },
      h(
        'p',
        { class: 'attempt-line' },
        sub.status === 'done' ? verdictBadge(sub.verdict) : h('span', { class: 'muted' }, sub.status),
        ' ',
        h('span', { class: 'num' }, sub.status === 'done' ? formatScore(sub.score, sub.max_score) : '–'),
        h('span', { class: 'muted' }, ` · ${sub.mode} · ${when(sub.created_at)}`),
      ),
      h('p', { class: 'attempt-actions' }, compareButton, ' ', restoreButton, ' ', h('a', { href: `/submissions/${encodeURIComponent(sub.id)}` }, 'Report'), ' ', out),
    );
  }

  async function refresh() {
    try {
      const page = await api(`/v1/submissions?${new URLSearchParams({ problem_id: problemId, mine: 'true', limit: String(LIMIT) })}`, { signal });
      list.replaceChildren(...page.items.map(item));
      note.textContent = page.items.length
        ? `Your last ${page.items.length === LIMIT ? LIMIT : page.items.length} submission(s) to this problem, newest first.`
        : 'No submissions from you to this problem yet.';
    } catch (e) {
      if (!isAbort(e)) note.textContent = `Could not load your attempts: ${e.message}`;
    }
  }

  return { section, refresh };
}
