// "My attempts" on a problem page: this learner's own submissions (the API's mine=true: the
// bearer token, or this browser's identity cookie), with verdict, score and time; an attempt's
// source (which the API returns to its owner only) can be compared with the draft in a diff
// (diffview.js, loaded on first use) and restored into the editor.
import { api } from './api.js';
import { confirmDialog, h, isAbort } from './dom.js';
import { formatScore, verdictBadge, verdictLabel } from './report.js';

const LIMIT = 10;

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

  /** The attempt's source, or null (with a note in `out`) when it is not returned to us. */
  async function attemptSource(sub, out) {
    const full = await api(`/v1/submissions/${encodeURIComponent(sub.id)}`, { signal });
    if (typeof full.source === 'string') return full.source;
    out.textContent = 'Its source is not available to you.';
    return null;
  }

  async function confirmRestore(source, focusAfter) {
    const ok = await confirmDialog({
      title: 'Restore this attempt?',
      body: 'The code in the editor, and the draft saved in this browser, will be replaced by this attempt.',
      confirm: 'Restore',
      cancel: 'Keep my code',
    });
    if (ok) restore(source);
    else focusAfter.focus();
  }

  function item(sub) {
    const out = h('span', { class: 'muted attempt-note', 'aria-live': 'polite' });
    const compareButton = h('button', { type: 'button', class: 'secondary' }, 'Compare');
    const restoreButton = h('button', { type: 'button', class: 'secondary' }, 'Restore');
    const guarded = (action) => () => action().catch((e) => { if (!isAbort(e)) out.textContent = e.message; });
    compareButton.addEventListener('click', guarded(async () => {
      const source = await attemptSource(sub, out);
      if (source === null) return;
      const { openDiff } = await import('./diffview.js');
      const verdict = sub.status === 'done' ? verdictLabel(sub.verdict) : sub.status;
      const choice = await openDiff({ attempt: source, draft: editorText(), about: `Attempt: ${verdict} · ${sub.mode} · ${when(sub.created_at)}.` });
      if (choice === 'restore') await confirmRestore(source, compareButton);
      else compareButton.focus();
    }));
    restoreButton.addEventListener('click', guarded(async () => {
      const source = await attemptSource(sub, out);
      if (source !== null) await confirmRestore(source, restoreButton);
    }));
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
