// "/": every problem the server holds, with the learner's own last verdict (from this browser).
import { api } from '../api.js';
import { h } from '../dom.js';
import { formatScore, verdictBadge } from '../report.js';
import { lastVerdicts } from '../storage.js';

export function difficultyTag(difficulty) {
  return h('span', { class: `difficulty ${difficulty}` }, difficulty);
}

export function tagList(tags) {
  return h('ul', { class: 'tags', 'aria-label': 'Tags' }, tags.map((t) => h('li', { class: 'tag' }, t)));
}

function card(problem) {
  const last = lastVerdicts.get(problem.id);
  return h(
    'li',
    { class: 'card', 'data-problem': problem.id },
    h('h2', {}, h('a', { href: `/problems/${encodeURIComponent(problem.id)}` }, problem.title)),
    h('div', { class: 'meta' }, difficultyTag(problem.difficulty), tagList(problem.tags)),
    h('p', {}, problem.summary),
    h(
      'p',
      { class: 'last-verdict' },
      'Your last verdict: ',
      last
        ? [
            verdictBadge(last.verdict),
            ` ${last.mode === 'run' ? 'on Run' : 'on Submit'}, ${formatScore(last.score, last.maxScore)} `,
            last.id ? h('a', { href: `/submissions/${encodeURIComponent(last.id)}` }, 'report') : null,
          ]
        : h('span', { class: 'muted' }, 'not attempted in this browser'),
    ),
  );
}

export async function problemListPage({ main, signal }) {
  const problems = await api('/v1/problems', { signal });
  document.title = 'Problems · jaxjudge';
  main.replaceChildren(
    h('h1', {}, 'Problems'),
    h('p', { class: 'muted' }, 'Pick a problem, write solve() in the browser, then Run or Submit.'),
    problems.length
      ? h('ul', { class: 'problem-list' }, problems.map(card))
      : h('p', {}, 'This server holds no problems yet.'),
  );
}
