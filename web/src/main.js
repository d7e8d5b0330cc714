// The single-page app: a router over four pages (problem list, problem, submissions, one
// submission), each a function that renders into <main> from the /v1 API. Page URLs are real
// paths served by the same FastAPI app (jaxjudge/service/web.py), so reloading or sharing a link works.
import './style.css';
import { ApiError, askForToken } from './api.js';
import { h, isAbort } from './dom.js';
import { problemListPage } from './pages/problems.js';
import { submissionListPage, submissionPage } from './pages/submissions.js';
import { token } from './storage.js';

const routes = [
  { pattern: /^\/$/, nav: 'problems', page: problemListPage },
  // The editor, markdown and KaTeX load only with the problem page (a separate chunk).
  {
    pattern: /^\/problems\/([^/]+)\/?$/,
    nav: 'problems',
    page: async (...args) => (await import('./pages/problem.js')).problemPage(...args),
  },
  { pattern: /^\/submissions\/?$/, nav: 'submissions', page: submissionListPage },
  { pattern: /^\/submissions\/([^/]+)\/?$/, nav: 'submissions', page: submissionPage },
];

let active = null;

export function navigate(url, { replace = false } = {}) {
  if (replace) history.replaceState(null, '', url);
  else history.pushState(null, '', url);
  render({ focus: true });
}

function updateNav(current) {
  for (const link of document.querySelectorAll('[data-nav]')) {
    if (link.dataset.nav === current) link.setAttribute('aria-current', 'page');
    else link.removeAttribute('aria-current');
  }
  document.getElementById('forget-token').hidden = !token.get();
}

function errorView(main, err, retry) {
  const status = err instanceof ApiError ? err.status : null;
  const title =
    status === 404 ? 'Not found' : status === 401 ? 'Access token needed' : 'Something went wrong';
  document.title = `${title} · jaxjudge`;
  main.replaceChildren(
    h('h1', {}, title),
    h('p', { class: 'error', role: 'alert' }, err?.message || String(err)),
    status === 401
      ? h(
          'p',
          {},
          h(
            'button',
            {
              type: 'button',
              class: 'primary',
              onclick: async () => {
                if (await askForToken(null)) retry();
              },
            },
            'Enter a token',
          ),
        )
      : h('p', {}, h('a', { href: '/' }, 'Back to the problem list')),
  );
}

async function render({ focus = false } = {}) {
  if (active) {
    active.controller.abort();
    active.cleanups.forEach((fn) => fn());
  }
  const controller = new AbortController();
  const cleanups = [];
  active = { controller, cleanups };
  const main = document.getElementById('main');
  const path = location.pathname;
  const route = routes.find((r) => r.pattern.test(path));
  updateNav(route?.nav);
  main.setAttribute('aria-busy', 'true');
  main.replaceChildren(h('p', { class: 'loading' }, 'Loading…'));
  const ctx = {
    main,
    signal: controller.signal,
    query: new URLSearchParams(location.search),
    navigate,
    onCleanup: (fn) => cleanups.push(fn),
  };
  try {
    if (!route) throw new ApiError(404, `There is no page at ${path}.`);
    const params = path.match(route.pattern).slice(1).map(decodeURIComponent);
    await route.page(ctx, ...params);
  } catch (err) {
    if (isAbort(err) || controller.signal.aborted) return;
    errorView(main, err, () => render({ focus: true }));
  } finally {
    if (active?.controller === controller) {
      main.removeAttribute('aria-busy');
      updateNav(route?.nav);
    }
  }
  if (focus && !controller.signal.aborted) {
    const heading = main.querySelector('h1');
    if (heading) {
      heading.setAttribute('tabindex', '-1');
      heading.focus({ preventScroll: false });
    }
  }
}

document.addEventListener('click', (event) => {
  if (event.defaultPrevented || event.button !== 0) return;
  if (event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
  const link = event.target.closest?.('a[href]');
  if (!link || link.target || link.hasAttribute('download')) return;
  const url = new URL(link.href, location.href);
  if (url.origin !== location.origin || !routes.some((r) => r.pattern.test(url.pathname))) return;
  if (url.pathname === location.pathname && url.search === location.search && url.hash) return;
  event.preventDefault();
  navigate(url.pathname + url.search);
});

window.addEventListener('popstate', () => render({ focus: true }));
document.addEventListener('jaxjudge:token', () => updateNav(active && routes.find((r) => r.pattern.test(location.pathname))?.nav));
document.getElementById('forget-token').addEventListener('click', () => {
  token.clear();
  render({ focus: true });
});

render();
