// The page's only way to the server: the same /v1 JSON API every other client uses. With auth on,
// a 401 opens the token dialog once (however many requests hit it at the same time) and the
// requests are retried with the token the learner typed.
import { h, modal, newId, sleep } from './dom.js';
import { token } from './storage.js';

export class ApiError extends Error {
  constructor(status, message, retryAfter = null) {
    super(message);
    this.name = 'ApiError';
    this.status = status;
    this.retryAfter = retryAfter;
  }
}

async function errorMessage(response) {
  try {
    const body = await response.json();
    if (body && typeof body.message === 'string') return body.message;
  } catch {
    // not JSON: fall through
  }
  return `${response.status} ${response.statusText || 'error'}`;
}

let pendingPrompt = null;

/** Ask for a token (one dialog for all concurrent callers). Resolves true if one was given. */
export function askForToken(reason) {
  if (!pendingPrompt) {
    pendingPrompt = tokenDialog(reason).finally(() => {
      pendingPrompt = null;
    });
  }
  return pendingPrompt;
}

async function tokenDialog(reason) {
  const titleId = newId('token-title');
  const input = h('input', {
    id: 'token-input',
    name: 'token',
    type: 'password',
    autocomplete: 'off',
    spellcheck: 'false',
    required: true,
    'aria-describedby': 'token-help',
  });
  const dialog = h(
    'dialog',
    { class: 'dialog', id: 'token-dialog', 'aria-labelledby': titleId },
    h(
      'form',
      { method: 'dialog' },
      h('h2', { id: titleId }, 'Access token'),
      reason ? h('p', { class: 'error', role: 'alert' }, reason) : null,
      h(
        'p',
        { id: 'token-help' },
        'This server asks for a bearer token. The page keeps it for this tab only ' +
          '(session storage) and sends it with each API request.',
      ),
      h('label', { for: 'token-input' }, 'Token'),
      input,
      h(
        'div',
        { class: 'actions' },
        h('button', { type: 'submit', value: 'ok', class: 'primary' }, 'Use token'),
        h('button', { type: 'submit', value: 'cancel', formnovalidate: true }, 'Cancel'),
      ),
    ),
  );
  const choice = await modal(dialog, { focus: input });
  const value = input.value.trim();
  if (choice !== 'ok' || !value) return false;
  token.set(value);
  document.dispatchEvent(new CustomEvent('jaxjudge:token'));
  return true;
}

/**
 * Call the API; returns the decoded JSON. Throws ApiError (status, server message) for an error
 * answer, TypeError for a network failure, AbortError when `signal` aborts.
 */
export async function api(path, { method = 'GET', body, signal } = {}) {
  for (;;) {
    const headers = { Accept: 'application/json' };
    const current = token.get();
    if (current) headers.Authorization = `Bearer ${current}`;
    if (body !== undefined) headers['Content-Type'] = 'application/json';
    const response = await fetch(path, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      signal,
      cache: 'no-store',
    });
    if (response.ok) return response.json();
    const message = await errorMessage(response);
    if (response.status === 401) {
      if (current) {
        token.clear();
        document.dispatchEvent(new CustomEvent('jaxjudge:token'));
      }
      const reason = current ? `The server refused the token: ${message}` : null;
      if (await askForToken(reason)) continue;
      throw new ApiError(401, 'This server needs an access token to answer.');
    }
    const retryAfter = Number.parseFloat(response.headers.get('Retry-After') ?? '');
    throw new ApiError(response.status, message, Number.isFinite(retryAfter) ? retryAfter : null);
  }
}

/**
 * Poll a submission until it is done: 250 ms at first, growing 1.5x to 2 s; a failed poll
 * (network, 429, 5xx) is retried with a longer backoff and reported through onUpdate, so the
 * page always says what it is waiting for.
 */
export async function pollSubmission(submission, { signal, onUpdate }) {
  let current = submission;
  let delay = 250;
  let failures = 0;
  while (current.status !== 'done') {
    onUpdate(current, null);
    await sleep(delay, signal);
    try {
      current = await api(`/v1/submissions/${encodeURIComponent(current.id)}`, { signal });
      failures = 0;
      delay = Math.min(delay * 1.5, 2000);
    } catch (err) {
      if (err?.name === 'AbortError') throw err;
      if (err instanceof ApiError && [401, 404].includes(err.status)) throw err;
      failures += 1;
      const wait = err.retryAfter ? err.retryAfter * 1000 : Math.min(1000 * 2 ** failures, 15000);
      onUpdate(current, `${err.message}; trying again in ${Math.ceil(wait / 1000)} s`);
      await sleep(wait, signal);
    }
  }
  onUpdate(current, null);
  return current;
}
