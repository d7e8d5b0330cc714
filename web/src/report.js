// A grade report as the learner sees it: verdict and message, the requirement checklist (with
// the part of the traced program a message refers to, when the grader sends it as `evidence`),
// the per-test table, and for visible tests the inputs, expected and actual outputs with the
// entries beyond tolerance marked.
import { h, newId, scrollBox } from './dom.js';
import { compareOutputs, leaves, renderArray, shapeText } from './values.js';

export const VERDICTS = {
  accepted: 'Accepted',
  wrong_answer: 'Wrong answer',
  requirement_failed: 'Requirement failed',
  runtime_error: 'Runtime error',
  compile_error: 'Compile error',
  time_limit_exceeded: 'Time limit exceeded',
  memory_limit_exceeded: 'Memory limit exceeded',
  internal_error: 'Internal error',
  skipped: 'Skipped',
};

export const verdictLabel = (v) => VERDICTS[v] ?? String(v);

export function verdictBadge(verdict) {
  const ok = verdict === 'accepted';
  const neutral = verdict === 'skipped';
  return h(
    'span',
    { class: `badge ${ok ? 'ok' : neutral ? 'neutral' : 'bad'}`, 'data-verdict': verdict },
    h('span', { 'aria-hidden': 'true' }, ok ? '✓ ' : neutral ? '– ' : '✗ '),
    verdictLabel(verdict),
  );
}

export function formatScore(score, max) {
  const f = (x) => String(Math.round(x * 100) / 100);
  return `${f(score ?? 0)} / ${f(max ?? 0)}`;
}

/** The line of submission.py a compile/runtime error message points at (the innermost). */
export function errorLine(message) {
  const found = [...String(message).matchAll(/File "submission\.py", line (\d+)/g)];
  return found.length ? Number(found.at(-1)[1]) : null;
}

const NOT_CHECKED = /^not checked\b/i;

const flat = (text) => String(text ?? '').split(/\s+/).filter(Boolean).join(' ');


/**
 * The message only restates what the requirement list and the test table show (accepted,
 * requirement failed), or what the summary already says: it is not shown a second time.
 */
export function repeatsDetails(report) {
  if (!report.summary) return false; // a report stored before summaries: its message is all
  if (['accepted', 'requirement_failed'].includes(report.verdict)) return true;
  const message = String(report.message ?? '').trim();
  return !message.includes('\n') && report.summary.includes(flat(message).replace(/\.$/, ''));
}

/**
 * The requirement checklist. `spec` is the problem's list (name, level, description); `results`
 * the report's (name, passed, message, optional evidence), or null before any grade.
 */
export function renderChecklist(spec, results, onShowLine = null) {
  const byName = new Map((results ?? []).map((r) => [r.name, r]));
  const names = [...spec.map((r) => r.name), ...(results ?? []).map((r) => r.name)];
  const items = [...new Set(names)].map((name) => {
    const req = spec.find((r) => r.name === name);
    const result = byName.get(name);
    let state = 'pending';
    let stateText = results ? 'not graded' : 'not checked yet';
    if (result) {
      if (result.passed) [state, stateText] = ['pass', 'passed'];
      else if (NOT_CHECKED.test(result.message)) [state, stateText] = ['pending', 'not checked'];
      else [state, stateText] = ['fail', 'failed'];
    }
    const icon = { pass: '✓', fail: '✗', pending: '○' }[state];
    const level = req?.level ?? result?.level;
    return h(
      'li',
      { class: `req ${state}`, 'data-requirement': name, 'data-state': state },
      h('span', { class: 'req-icon', 'aria-hidden': 'true' }, icon),
      h(
        'div',
        { class: 'req-body' },
        h(
          'p',
          { class: 'req-title' },
          h('strong', {}, name),
          ' ',
          h('span', { class: `req-state ${state}` }, `(${stateText})`),
          level ? h('span', { class: 'tag' }, level === 'spec' ? 'traced jaxpr' : 'exported program') : null,
          result && result.max_score ? h('span', { class: 'muted' }, ` ${formatScore(result.score, result.max_score)} points`) : null,
        ),
        req?.description ? h('p', { class: 'muted req-desc' }, req.description) : null,
        result ? h('p', { class: `req-message${state === 'pending' ? ' muted' : ''}` }, result.message) : null,
        result?.evidence ? renderSourceLines(result.evidence, onShowLine) : null,
        result?.evidence ? renderEvidence(name, result.evidence, state === 'fail') : null,
      ),
    );
  });
  return h('ul', { class: 'checklist' }, items);
}

/**
 * The submission's lines the marked ops came from ("solution.py:14"): each a button that puts
 * the editor's cursor there when the page has an editor (onShowLine), else plain text.
 */
export function renderSourceLines(evidence, onShowLine) {
  const lines = (evidence.source_lines ?? []).filter((n) => Number.isInteger(n) && n > 0);
  if (!lines.length) return null;
  const file = String(evidence.source_file ?? '');
  return h(
    'p',
    { class: 'source-lines' },
    'From your code: ',
    lines.map((n, i) => [
      i ? ', ' : null,
      onShowLine
        ? h('button', { type: 'button', class: 'link-button source-line', 'data-line': String(n), title: `Show line ${n} in the editor`, onclick: () => onShowLine(n) }, `${file}:${n}`)
        : h('code', { class: 'source-line' }, `${file}:${n}`),
    ]),
  );
}

/**
 * The part of the verified program a requirement refers to: a few ops, the ones the rule
 * decided on marked. Text nodes only (the ops came out of a sandbox). Open when it failed.
 */
export function renderEvidence(name, evidence, open) {
  if (typeof evidence !== 'object') return null;
  const focus = new Set(evidence.focus ?? []);
  const lines = String(evidence.text ?? '').split('\n');
  return h(
    'details',
    { class: 'evidence', open },
    h('summary', {}, 'The program part this refers to', h('span', { class: 'muted' }, ` (input shapes ${evidence.program})`)),
    scrollBox(
      `Program part for ${name}`,
      h(
        'pre',
        { class: 'evidence-code' },
        lines.map((line, i) => [focus.has(i) ? h('mark', { class: 'focus' }, line) : line, i < lines.length - 1 ? '\n' : null]),
      ),
    ),
  );
}

const bytesText = (n) =>
  n === null || n === undefined ? '?' : n < 1024 ? `${n} B` : n < 1048576 ? `${(n / 1024).toFixed(1)} KB` : `${(n / 1048576).toFixed(1)} MB`;

/** What the program holds in memory, next to the reference's program at the same shapes. */
export function renderMemory(memory, hy) {
  const row = (who, m) =>
    m
      ? h(
          'tr',
          { 'data-who': who },
          h('th', { scope: 'row' }, who),
          h('td', { class: 'num' }, `${m.peak_arrays} (${bytesText(m.peak_bytes)})`),
          h('td', {}, m.largest ? h('code', {}, m.largest.shape) : '–', m.largest ? ` ${bytesText(m.largest.bytes)}` : ''),
          h('td', {}, (m.held ?? []).map((a) => h('code', { class: 'held' }, `${a.shape} ${a.op.replace(/^stablehlo\./, '')}`))),
        )
      : null;
  const caption = `Memory at input shapes ${memory.yours.program}`;
  return h(
    'section',
    { class: 'memory' },
    h(hy, {}, 'Memory'),
    h('p', { class: 'memory-summary' }, memory.summary),
    scrollBox(
      caption,
      h(
        'table',
        { class: 'tests memory-table' },
        h('caption', {}, caption),
        h(
          'thead',
          {},
          h(
            'tr',
            {},
            h('th', { scope: 'col' }, 'Program'),
            h('th', { scope: 'col' }, 'Held at once'),
            h('th', { scope: 'col' }, 'Largest'),
            h('th', { scope: 'col' }, 'The largest held'),
          ),
        ),
        h('tbody', {}, row('Yours', memory.yours), row('Reference', memory.reference)),
      ),
    ),
  );
}

/** Inputs (or outputs) of a test as a definition list of leaves. */
export function renderLeaves(value, label) {
  return scrollBox(
    label,
    h(
      'dl',
      { class: 'leaves' },
      leaves(value).map(([path, v]) => [
        h('dt', {}, h('code', {}, path || 'value'), ' ', h('span', { class: 'muted' }, shapeText(v))),
        h('dd', {}, renderArray(v)),
      ]),
    ),
  );
}

function renderComparison(test, tolerance) {
  const { rows, differing, total } = compareOutputs(test.details.expected, test.details.got, tolerance);
  const tableLabel = `${test.name}: expected and actual outputs`;
  const table = h(
    'table',
    { class: 'compare' },
    h('caption', { class: 'sr-only' }, tableLabel),
    h(
      'thead',
      {},
      h('tr', {}, h('th', { scope: 'col' }, 'Output'), h('th', { scope: 'col' }, 'Expected'), h('th', { scope: 'col' }, 'Got')),
    ),
    h(
      'tbody',
      {},
      rows.map((row) =>
        h(
          'tr',
          {},
          h('th', { scope: 'row' }, h('code', {}, row.path || 'value')),
          h('td', {}, row.extra ? h('span', { class: 'muted' }, 'not expected') : renderArray(row.expected)),
          h(
            'td',
            {},
            !row.present
              ? h('mark', {}, 'missing')
              : [
                  renderArray(row.got, row.bad),
                  !row.sameShape && !row.extra
                    ? h('span', { class: 'note' }, ` shape ${shapeText(row.got)}, expected ${shapeText(row.expected)}`)
                    : null,
                ],
          ),
        ),
      ),
    ),
  );
  const summary = test.details.got === undefined || test.details.got === null
    ? 'No output was produced.'
    : differing
      ? `${differing} of ${total} entries differ by more than the tolerance (highlighted).`
      : `All ${total} entries are within the tolerance.`;
  return [
    h('p', { class: 'compare-summary' }, summary),
    scrollBox(tableLabel, table),
  ];
}

function renderTestDetails(test, tolerance) {
  const open = test.verdict !== 'accepted';
  return h(
    'details',
    { class: 'test-details', open, 'data-test': test.name },
    h('summary', {}, h('code', {}, test.name), ': ', verdictLabel(test.verdict)),
    test.message ? h('p', { class: 'message-line' }, test.message) : null,
    renderComparison(test, tolerance),
    h('details', { class: 'inputs' }, h('summary', {}, 'Inputs'), renderLeaves(test.details.inputs, `${test.name}: inputs`)),
  );
}

function testsTable(tests, caption) {
  return scrollBox(
    caption,
    h(
      'table',
      { class: 'tests' },
      h('caption', {}, caption),
      h(
        'thead',
        {},
        h(
          'tr',
          {},
          h('th', { scope: 'col' }, 'Test'),
          h('th', { scope: 'col' }, 'Verdict'),
          h('th', { scope: 'col' }, 'Max error'),
          h('th', { scope: 'col' }, 'Points'),
          h('th', { scope: 'col' }, 'Time'),
          h('th', { scope: 'col' }, 'Message'),
        ),
      ),
      h(
        'tbody',
        {},
        tests.map((t) =>
          h(
            'tr',
            { 'data-test': t.name, 'data-verdict': t.verdict },
            h('th', { scope: 'row' }, h('code', {}, t.name), t.custom ? [' ', h('span', { class: 'tag' }, 'your input')] : null),
            h('td', { 'data-label': 'Verdict' }, verdictBadge(t.verdict)),
            h('td', { class: 'num', 'data-label': 'Max error' }, t.max_abs_error === null || t.max_abs_error === undefined ? '–' : t.max_abs_error === 0 ? '0' : t.max_abs_error.toExponential(1)),
            h('td', { class: 'num', 'data-label': 'Points' }, formatScore(t.score, t.max_score)),
            h('td', { class: 'num', 'data-label': 'Time' }, t.seconds === null || t.seconds === undefined ? '–' : t.seconds < 1 ? `${(t.seconds * 1000).toFixed(1)} ms` : `${t.seconds.toFixed(2)} s`),
            h('td', { class: 'message-cell', 'data-label': 'Message' }, t.message),
          ),
        ),
      ),
    ),
  );
}

function tableCaption(visible) {
  const own = visible.filter((t) => t.custom).length;
  const published = `Published examples (${visible.length - own})`;
  return own ? `${published} and your input${own > 1 ? 's' : ''} (${own})` : published;
}

/**
 * The whole report. Options: tolerance ({rtol, atol}) for the highlighting; requirementsSpec
 * (the problem's requirements, for descriptions); onShowLine(n) to offer "show line n".
 */
export function renderReport(report, { tolerance, requirementsSpec = [], onShowLine, headingLevel = 2 } = {}) {
  const hx = `h${headingLevel}`;
  const hy = `h${Math.min(headingLevel + 1, 6)}`;
  const line = ['compile_error', 'runtime_error'].includes(report.verdict) ? errorLine(report.message) : null;
  const visible = report.tests.filter((t) => t.visible);
  const hidden = report.tests.filter((t) => !t.visible);
  const withDetails = visible.filter((t) => t.details);
  const hiddenCounts = new Map();
  hidden.forEach((t) => hiddenCounts.set(t.verdict, (hiddenCounts.get(t.verdict) ?? 0) + 1));
  const headingId = newId('report');
  return h(
    'section',
    { class: 'report', 'aria-labelledby': headingId, 'data-verdict': report.verdict },
    h(hx, { id: headingId }, 'Verdict'),
    h(
      'p',
      { class: 'verdict-line' },
      verdictBadge(report.verdict),
      h('span', { class: 'score' }, ` Score ${formatScore(report.score, report.max_score)}`),
      h('span', { class: 'muted' }, ` · ${report.mode === 'run' ? 'Run (published examples)' : 'Submit (all tests)'}`),
    ),
    report.summary ? h('p', { class: 'summary-line' }, report.summary) : null,
    report.message && !repeatsDetails(report)
      ? scrollBox('Verdict message', h('pre', { class: 'message' }, report.message))
      : null,
    line && onShowLine
      ? h('p', {}, h('button', { type: 'button', class: 'secondary', onclick: () => onShowLine(line) }, `Show line ${line} in the editor`))
      : null,
    report.requirements.length
      ? [h(hy, {}, 'Requirements'), renderChecklist(requirementsSpec, report.requirements, onShowLine)]
      : null,
    report.memory ? renderMemory(report.memory, hy) : null,
    h(hy, {}, 'Tests'),
    visible.length ? testsTable(visible, tableCaption(visible)) : null,
    hidden.length
      ? h(
          'details',
          { class: 'hidden-tests' },
          h(
            'summary',
            {},
            `Hidden tests (${hidden.length}): `,
            [...hiddenCounts].map(([v, n]) => `${n} ${verdictLabel(v).toLowerCase()}`).join(', '),
          ),
          testsTable(hidden, `Hidden tests (${hidden.length})`),
        )
      : null,
    withDetails.length
      ? [
          h(hy, {}, 'Published examples in detail'),
          tolerance
            ? h(
                'p',
                { class: 'muted' },
                `Entries are highlighted when |got − expected| > atol + rtol·|expected| (rtol = ${tolerance.rtol}, atol = ${tolerance.atol}).`,
              )
            : null,
          withDetails.map((t) => renderTestDetails(t, tolerance)),
        ]
      : null,
    report.output
      ? h('details', { class: 'output' }, h('summary', {}, 'Output of your program (stdout and stderr)'), scrollBox('Program output', h('pre', {}, report.output)))
      : null,
    Object.keys(report.timings ?? {}).length
      ? h(
          'details',
          { class: 'timings' },
          h('summary', {}, 'Timings'),
          h(
            'dl',
            { class: 'pairs' },
            Object.entries(report.timings).map(([k, v]) => [h('dt', {}, k), h('dd', {}, `${Number(v).toFixed(3)} s`)]),
          ),
        )
      : null,
  );
}

