// Tiny DOM helpers. Every text from the server goes in as a text node (never as HTML): report
// messages and program output are written by the submission.

/** Create an element: h('a', {href: '/'}, 'text', childNode, [more]). */
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key === 'class') el.className = value;
    else if (key.startsWith('on') && typeof value === 'function') {
      el.addEventListener(key.slice(2), value);
    } else el.setAttribute(key, value === true ? '' : String(value));
  }
  append(el, children);
  return el;
}

export function append(el, children) {
  for (const child of [children].flat(Infinity)) {
    if (child === undefined || child === null || child === false) continue;
    el.append(child instanceof Node ? child : String(child));
  }
  return el;
}

/** Text only screen readers announce (e.g. "passed" beside a check mark). */
export function srOnly(text) {
  return h('span', { class: 'sr-only' }, text);
}

let uid = 0;
export function newId(prefix) {
  uid += 1;
  return `${prefix}-${uid}`;
}

/**
 * A horizontally scrollable box (wide tables, arrays, display math). It takes keyboard focus
 * only while its content overflows, so keyboard users can scroll it (WCAG 2.1.1) without
 * adding tab stops on wide screens.
 */
export function scrollBox(label, ...children) {
  const box = h('div', { class: 'scroll-box', role: 'region', 'aria-label': label }, ...children);
  observeOverflow(box);
  return box;
}

const overflowObserver =
  typeof ResizeObserver === 'undefined'
    ? null
    : new ResizeObserver((entries) => entries.forEach((e) => updateFocusable(e.target)));

function updateFocusable(el) {
  if (el.scrollWidth > el.clientWidth + 1) el.setAttribute('tabindex', '0');
  else el.removeAttribute('tabindex');
}

export function observeOverflow(el) {
  if (overflowObserver) overflowObserver.observe(el);
  requestAnimationFrame(() => updateFocusable(el));
}

/** Sleep that ends early (rejecting with AbortError) when `signal` aborts. */
export function sleep(ms, signal) {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason ?? new DOMException('aborted', 'AbortError'));
      return;
    }
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    function onAbort() {
      clearTimeout(timer);
      reject(signal.reason ?? new DOMException('aborted', 'AbortError'));
    }
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

export function isAbort(err) {
  return err?.name === 'AbortError';
}

/** A modal <dialog>; resolves with the button's value ('' when closed with Escape). */
export function modal(dialog, { focus } = {}) {
  document.body.append(dialog);
  return new Promise((resolve) => {
    dialog.addEventListener(
      'close',
      () => {
        const value = dialog.returnValue;
        dialog.remove();
        resolve(value);
      },
      { once: true },
    );
    dialog.showModal();
    if (focus) focus.focus();
  });
}

/** Ask before doing something destructive. Resolves true when confirmed. */
export async function confirmDialog({ title, body, confirm, cancel }) {
  const titleId = newId('confirm-title');
  const cancelButton = h('button', { type: 'submit', value: 'cancel' }, cancel);
  const dialog = h(
    'dialog',
    { class: 'dialog', 'aria-labelledby': titleId },
    h(
      'form',
      { method: 'dialog' },
      h('h2', { id: titleId }, title),
      h('p', {}, body),
      h(
        'div',
        { class: 'actions' },
        h('button', { type: 'submit', value: 'confirm', class: 'danger' }, confirm),
        cancelButton,
      ),
    ),
  );
  return (await modal(dialog, { focus: cancelButton })) === 'confirm';
}
