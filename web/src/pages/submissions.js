// "/submissions" (newest first, filtered by problem and verdict, paged with the API's cursor)
// and "/submissions/{id}" (one submission's full report, followed live until it is done).
import { api, pollSubmission } from '../api.js';
import { h, isAbort, observeOverflow, scrollBox } from '../dom.js';
import { formatScore, renderReport, VERDICTS, verdictBadge, verdictLabel } from '../report.js';

const PAGE = 25;

function when(iso) {
  if (!iso) return '–';
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? iso : date.toLocaleString();
}

const shortId = (id) => id.slice(0, 8);

function row(sub) {
  return h(
    'tr',
    { 'data-submission': sub.id, 'data-verdict': sub.verdict ?? '' },
    h('th', { scope: 'row' }, h('a', { href: `/submissions/${encodeURIComponent(sub.id)}` }, h('code', {}, shortId(sub.id)))),
    h('td', {}, when(sub.created_at)),
    h('td', {}, h('a', { href: `/problems/${encodeURIComponent(sub.problem_id)}` }, sub.problem_id)),
    h('td', {}, sub.mode),
    h('td', {}, sub.status === 'done' ? verdictBadge(sub.verdict) : h('span', { class: 'muted' }, sub.status)),
    h('td', { class: 'num' }, sub.status === 'done' ? formatScore(sub.score, sub.max_score) : '–'),
  );
}

function select(id, label, name, options, value) {
  return h(
    'div',
    { class: 'field' },
    h('label', { for: id }, label),
    h(
      'select',
      { id, name },
      options.map(([v, text]) => h('option', { value: v, selected: v === value }, text)),
    ),
  );
}

export async function submissionListPage({ main, signal, query, navigate }) {
  const problemId = query.get('problem_id') ?? '';
  const verdict = query.get('verdict') ?? '';
  const mine = query.get('mine') === 'true';
  const params = (cursor) => {
    const p = new URLSearchParams({ limit: String(PAGE) });
    if (mine) p.set('mine', 'true');
    if (problemId) p.set('problem_id', problemId);
    if (verdict) p.set('verdict', verdict);
    if (cursor) p.set('cursor', cursor);
    return p;
  };
  const [problems, first] = await Promise.all([
    api('/v1/problems', { signal }),
    api(`/v1/submissions?${params()}`, { signal }),
  ]);
  document.title = 'Submissions · jaxjudge';

  const problemOptions = [['', 'All problems'], ...problems.map((p) => [p.id, p.title])];
  if (problemId && !problems.some((p) => p.id === problemId)) problemOptions.push([problemId, problemId]);
  const verdictOptions = [
    ['', 'All verdicts'],
    ...Object.entries(VERDICTS).filter(([v]) => v !== 'skipped'),
  ];
  const form = h(
    'form',
    { class: 'filters', role: 'search', 'aria-label': 'Filter submissions' },
    select('filter-problem', 'Problem', 'problem_id', problemOptions, problemId),
    select('filter-verdict', 'Verdict', 'verdict', verdictOptions, verdict),
    h(
      'div',
      { class: 'field checkbox' },
      h('input', { type: 'checkbox', id: 'filter-mine', name: 'mine', value: 'true', checked: mine }),
      h('label', { for: 'filter-mine' }, 'Only mine'),
    ),
    h('div', { class: 'field buttons' }, h('button', { type: 'submit', class: 'primary' }, 'Apply filters'), h('a', { href: '/submissions' }, 'Clear filters')),
  );
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    const data = new FormData(form);
    const next = new URLSearchParams();
    for (const key of ['problem_id', 'verdict', 'mine']) if (data.get(key)) next.set(key, data.get(key));
    navigate(`/submissions${next.size ? `?${next}` : ''}`);
  });

  const tbody = h('tbody', {}, first.items.map(row));
  const filtered = problemId || verdict || mine;
  const caption = filtered
    ? `${mine ? 'My submissions' : 'Submissions'}${problemId ? ` to ${problemId}` : ''}${verdict ? ` with verdict ${verdictLabel(verdict)}` : ''}, newest first`
    : 'All submissions, newest first';
  const table = h(
    'table',
    { class: 'submissions' },
    h('caption', {}, caption),
    h(
      'thead',
      {},
      h(
        'tr',
        {},
        ['Submission', 'Submitted', 'Problem', 'Mode', 'Verdict', 'Score'].map((c) => h('th', { scope: 'col' }, c)),
      ),
    ),
    tbody,
  );
  let cursor = first.next_cursor;
  const more = h('button', { type: 'button', class: 'secondary', hidden: !cursor }, 'Load more');
  const count = h('p', { class: 'muted', role: 'status' });
  const updateCount = () => {
    count.textContent = `${tbody.rows.length} shown${cursor ? '; more are available' : ''}.`;
  };
  more.addEventListener('click', async () => {
    more.setAttribute('aria-disabled', 'true');
    try {
      const page = await api(`/v1/submissions?${params(cursor)}`, { signal });
      page.items.forEach((s) => tbody.append(row(s)));
      cursor = page.next_cursor;
      more.hidden = !cursor;
      updateCount();
    } catch (err) {
      if (!isAbort(err)) count.textContent = `Could not load more: ${err.message}`;
    } finally {
      more.removeAttribute('aria-disabled');
    }
  });
  updateCount();

  main.replaceChildren(
    h('h1', {}, 'Submissions'),
    form,
    first.items.length ? scrollBox('Submissions', table) : h('p', { class: 'empty' }, filtered ? 'No submissions match these filters.' : 'No submissions yet.'),
    count,
    h('p', {}, more),
  );
  main.querySelectorAll('.scroll-box').forEach(observeOverflow);
}

function metaList(sub) {
  const pairs = [
    ['Problem', h('a', { href: `/problems/${encodeURIComponent(sub.problem_id)}` }, sub.problem_id)],
    ['Mode', sub.mode === 'run' ? 'run (published examples)' : 'submit (all tests)'],
    ['Status', h('span', { 'data-field': 'status' }, sub.status)],
    ['Submitted', when(sub.created_at)],
    ['Finished', h('span', { 'data-field': 'finished' }, when(sub.finished_at))],
    ['Source', `${sub.source_bytes} bytes, SHA-256 `, h('code', { class: 'hash' }, sub.source_sha256)],
    ['Grading attempts', h('span', { 'data-field': 'attempts' }, String(sub.attempts))],
  ];
  return h('dl', { class: 'pairs meta-list' }, pairs.map(([k, ...v]) => [h('dt', {}, k), h('dd', {}, ...v)]));
}

export async function submissionPage({ main, signal }, id) {
  let sub = await api(`/v1/submissions/${encodeURIComponent(id)}`, { signal });
  const problem = await api(`/v1/problems/${encodeURIComponent(sub.problem_id)}`, { signal }).catch((err) => {
    if (isAbort(err)) throw err;
    return null; // the report still renders, without descriptions and highlighting
  });
  document.title = `Submission ${shortId(sub.id)} · jaxjudge`;
  const status = h('p', { class: 'status', role: 'status' });
  const result = h('div', { class: 'result' });
  main.replaceChildren(h('h1', {}, 'Submission ', h('code', {}, shortId(sub.id))), metaList(sub), status, result);
  if (sub.status !== 'done') {
    sub = await pollSubmission(sub, {
      signal,
      onUpdate: (current, trouble) => {
        main.querySelector('[data-field="status"]').textContent = current.status;
        status.textContent = `${current.status === 'queued' ? 'Queued: waiting for a free grader…' : current.status === 'running' ? 'Running…' : 'Done.'}${trouble ? ` (${trouble})` : ''}`;
      },
    });
    main.querySelector('[data-field="finished"]').textContent = when(sub.finished_at);
    main.querySelector('[data-field="attempts"]').textContent = String(sub.attempts);
    status.textContent = `Done: ${verdictLabel(sub.verdict)}.`;
  }
  result.replaceChildren(
    sub.report
      ? renderReport(sub.report, { tolerance: problem?.tolerance, requirementsSpec: problem?.requirements ?? [] })
      : h('p', {}, `Finished with ${verdictLabel(sub.verdict)}; no report was stored.`),
  );
  result.querySelectorAll('.scroll-box').forEach(observeOverflow);
}
