// "/problems/{id}": statement (markdown + KaTeX), published examples, constraints, the editor
// with the draft kept in localStorage, Run/Submit with a live status, and the report.
import { api, pollSubmission } from '../api.js';
import { attemptsSection } from '../attempts.js';
import { confirmDialog, h, isAbort, observeOverflow } from '../dom.js';
import { createEditor } from '../editor.js';
import { renderStatement } from '../markdown.js';
import { formatScore, renderChecklist, renderLeaves, renderReport, verdictLabel } from '../report.js';
import { drafts, lastVerdicts } from '../storage.js';
import { difficultyTag, tagList } from './problems.js';

const isMac = /Mac|iPhone|iPad/.test(navigator.platform || navigator.userAgent);
const MOD = isMac ? '⌘' : 'Ctrl';

function examplesSection(problem) {
  return h(
    'section',
    { class: 'examples', 'aria-labelledby': 'examples-h' },
    h('h2', { id: 'examples-h' }, 'Published examples'),
    h('p', { class: 'muted' }, 'Run grades your code on exactly these inputs; Submit adds the hidden tests.'),
    problem.examples.map((ex) =>
      h(
        'details',
        { class: 'example', 'data-example': ex.name },
        h('summary', {}, h('code', {}, ex.name), ex.note ? ` — ${ex.note}` : ''),
        h('p', { class: 'label' }, 'Inputs'),
        renderLeaves(ex.inputs, `${ex.name}: inputs`),
        h('p', { class: 'label' }, 'Expected output'),
        renderLeaves(ex.expected, `${ex.name}: expected output`),
      ),
    ),
  );
}

function constraintsSection(problem) {
  const { text, ...rest } = problem.constraints ?? {};
  const lines = Array.isArray(text)
    ? text
    : Object.entries(rest).map(([k, v]) => `${k}: ${Array.isArray(v) ? v.join(' to ') : v}`);
  const args = problem.arguments.map((a) => a.name).join(', ');
  const { limits, tolerance } = problem;
  return h(
    'section',
    { class: 'constraints', 'aria-labelledby': 'constraints-h' },
    h('h2', { id: 'constraints-h' }, 'Constraints and limits'),
    h('p', {}, 'Write ', h('code', {}, `${problem.entry_point}(${args})`), '.'),
    lines.length ? h('ul', {}, lines.map((line) => h('li', {}, line))) : null,
    h(
      'dl',
      { class: 'pairs' },
      h('dt', {}, 'Time'),
      h('dd', {}, `${limits.wall_seconds} s wall clock, ${limits.cpu_seconds} s CPU per stage`),
      h('dt', {}, 'Memory'),
      h('dd', {}, `${limits.memory_mb} MB`),
      h('dt', {}, 'Output'),
      h('dd', {}, `${limits.output_kb} KB of stdout and stderr`),
      tolerance
        ? [h('dt', {}, 'Tolerance'), h('dd', {}, `|got − expected| ≤ ${tolerance.atol} + ${tolerance.rtol}·|expected|`)]
        : null,
    ),
  );
}

const STATUS_TEXT = {
  queued: 'Queued: waiting for a free grader…',
  running: 'Running: grading your code…',
  done: 'Done.',
};

export async function problemPage(ctx, id) {
  const { main, signal, onCleanup } = ctx;
  const problem = await api(`/v1/problems/${encodeURIComponent(id)}`, { signal });
  document.title = `${problem.title} · jaxjudge`;

  const statement = h('div', { class: 'statement' });
  statement.innerHTML = renderStatement(problem.statement); // markdown-it with html: false
  statement.querySelectorAll('.scroll-box').forEach(observeOverflow);
  // The examples once: under the statement's own "Examples" heading when it has one.
  const examples = examplesSection(problem);
  const examplesHeading = [...statement.querySelectorAll('h2')].find((e) => /^examples?$/i.test(e.textContent.trim()));
  if (examplesHeading) {
    let end = examplesHeading.nextElementSibling;
    while (end && end.tagName !== 'H2') end = end.nextElementSibling;
    const exact = h('div', { class: 'examples in-statement', 'data-examples': 'statement' },
      h('p', { class: 'muted' }, 'The exact values (these are the published tests: Run grades your code on exactly these inputs; Submit adds the hidden tests):'),
      [...examples.querySelectorAll('details.example')]);
    statement.insertBefore(exact, end);
  }

  const saved = drafts.get(problem.id);
  const draftNote = h('span', { class: 'muted draft-note' }, saved !== null ? 'Your draft was restored from this browser.' : '');
  const statusText = h('span', { class: 'status-text' });
  const elapsed = h('span', { class: 'elapsed muted', 'aria-hidden': 'true' });
  const status = h('p', { id: 'grade-status', class: 'status', role: 'status' }, statusText);
  const statusRow = h('div', { class: 'status-row' }, h('span', { class: 'spinner', 'aria-hidden': 'true', hidden: true }), status, elapsed);
  const resultBox = h('div', { class: 'result', id: 'result' });
  const checklist = h(
    'section',
    { class: 'pending-checklist', 'aria-labelledby': 'checklist-h' },
    h('h2', { id: 'checklist-h' }, 'Requirement checklist'),
    renderChecklist(problem.requirements, null),
  );
  const runButton = h('button', { type: 'button', class: 'primary', id: 'run', 'aria-keyshortcuts': 'Control+Enter Meta+Enter' }, 'Run examples');
  const submitButton = h('button', { type: 'button', class: 'primary', id: 'submit', 'aria-keyshortcuts': 'Control+Shift+Enter Meta+Shift+Enter' }, 'Submit');
  const resetButton = h('button', { type: 'button', class: 'secondary', id: 'reset' }, 'Reset to starter');
  const editorFrame = h('div', { class: 'editor-frame' });
  // Run on my own input: an example's inputs as JSON, edited, sent with a run (the server
  // checks them against the constraints; the reference computes the expected output).
  const firstExample = problem.examples[0];
  const ownInput = h('textarea', { id: 'own-input', rows: 6, spellcheck: 'false', 'aria-describedby': 'own-input-help' },
    firstExample ? JSON.stringify(firstExample.inputs) : '{}');
  const ownError = h('p', { class: 'own-error', role: 'alert' });
  const ownButton = h('button', { type: 'button', class: 'secondary', id: 'run-own' }, 'Run on this input');
  const ownSection = h(
    'details',
    { class: 'own-input' },
    h('summary', {}, 'Run on your own input'),
    h('label', { for: 'own-input' }, 'Inputs (JSON: an object of the arguments)'),
    h('p', { id: 'own-input-help', class: 'muted hint' }, 'Starts from the first published example; the input must respect the constraints. Runs with the published examples; the reference computes the expected output; worth no points.'),
    ownInput,
    h('p', {}, ownButton),
    ownError,
  );

  const attempts = attemptsSection({
    problemId: problem.id,
    signal,
    editorText: () => editor.text(),
    restore: (source) => {
      editor.setText(source);
      flush();
      draftNote.textContent = 'Attempt restored into the editor.';
      editor.focus();
    },
  });

  // Narrow screens: Statement / Code tabs, so the editor is one tap away (CSS shows the tab
  // bar below 64rem only; wide screens show both panes side by side).
  const tabs = [['statement', 'Statement', 'pane-statement'], ['code', 'Code', 'pane-code']].map(([pane, label, panel]) =>
    h('button', { type: 'button', role: 'tab', id: `tab-${pane}`, 'aria-controls': panel, 'data-pane': pane }, label));
  const tabBar = h('div', { class: 'pane-tabs', role: 'tablist', 'aria-label': 'Show' }, tabs);
  const selectPane = (pane, focus = false) => {
    layout.dataset.pane = pane;
    for (const tab of tabs) {
      const on = tab.dataset.pane === pane;
      tab.setAttribute('aria-selected', String(on));
      tab.tabIndex = on ? 0 : -1;
      if (on && focus) tab.focus();
    }
  };
  tabs.forEach((tab, i) => {
    tab.addEventListener('click', () => selectPane(tab.dataset.pane));
    tab.addEventListener('keydown', (event) => {
      if (event.key !== 'ArrowRight' && event.key !== 'ArrowLeft') return;
      event.preventDefault();
      selectPane(tabs[(i + 1) % tabs.length].dataset.pane, true);
    });
  });

  const layout = h(
      'div',
      { class: 'problem-layout', 'data-pane': 'statement' },
      h(
        'article',
        { class: 'problem-text', id: 'pane-statement', role: 'tabpanel', 'aria-labelledby': 'problem-title' },
        h('h1', { id: 'problem-title' }, problem.title),
        h('div', { class: 'meta' }, difficultyTag(problem.difficulty), tagList(problem.tags)),
        h('p', { class: 'jump' }, h('a', { href: '#solution-h' }, 'Skip to your solution')),
        statement,
        examplesHeading ? null : examples,
        constraintsSection(problem),
      ),
      h(
        'section',
        { class: 'workspace', id: 'pane-code', role: 'tabpanel', 'aria-labelledby': 'solution-h' },
        h('h2', { id: 'solution-h' }, 'Your solution'),
        h(
          'p',
          { id: 'editor-help', class: 'muted hint' },
          `Python. Tab indents; press Esc then Tab to leave the editor. ${MOD}+Enter runs the examples, ` +
            `${MOD}+Shift+Enter submits. Your draft is saved in this browser as you type.`,
        ),
        editorFrame,
        h('div', { class: 'actions' }, runButton, submitButton, resetButton, draftNote),
        ownSection,
        statusRow,
        resultBox,
        checklist,
        attempts.section,
      ),
    );
  main.replaceChildren(tabBar, layout);
  selectPane('statement');
  main.querySelector('.jump a')?.addEventListener('click', () => selectPane('code'));

  // -- the draft --------------------------------------------------------------------------------
  let saveTimer = null;
  const flush = () => {
    clearTimeout(saveTimer);
    saveTimer = null;
    drafts.save(problem.id, editor.text(), problem.starter);
  };
  const editor = createEditor({
    parent: editorFrame,
    doc: saved ?? problem.starter,
    labelledBy: 'solution-h',
    describedBy: 'editor-help',
    onChange: () => {
      clearTimeout(saveTimer);
      saveTimer = setTimeout(() => {
        flush();
        draftNote.textContent = 'Draft saved in this browser.';
      }, 300);
    },
    onRun: () => grade('run'),
    onSubmit: () => grade('submit'),
  });
  window.addEventListener('pagehide', flush);
  onCleanup(() => {
    flush();
    window.removeEventListener('pagehide', flush);
    editor.destroy();
  });

  resetButton.addEventListener('click', async () => {
    const ok = await confirmDialog({
      title: 'Reset to the starter code?',
      body: 'Your code in the editor, and the draft saved in this browser, will be replaced by the starter.',
      confirm: 'Reset',
      cancel: 'Keep my code',
    });
    if (!ok) {
      resetButton.focus();
      return;
    }
    editor.setText(problem.starter);
    flush();
    draftNote.textContent = 'Reset to the starter code.';
    editor.focus();
  });

  // -- grading ----------------------------------------------------------------------------------
  let busy = false;
  const setBusy = (value) => {
    busy = value;
    for (const button of [runButton, submitButton]) {
      if (value) button.setAttribute('aria-disabled', 'true');
      else button.removeAttribute('aria-disabled');
    }
    statusRow.querySelector('.spinner').hidden = !value;
  };

  function showResult(submission) {
    const report = submission.report;
    resultBox.replaceChildren(
      report
        ? renderReport(report, {
            tolerance: problem.tolerance,
            requirementsSpec: problem.requirements,
            onShowLine: (line) => editor.showLine(line),
          })
        : h('p', {}, `Finished with ${verdictLabel(submission.verdict)} but without a report.`),
      h('p', {}, h('a', { href: `/submissions/${encodeURIComponent(submission.id)}` }, 'Open the full report')),
    );
    resultBox.querySelectorAll('.scroll-box').forEach(observeOverflow);
    checklist.hidden = Boolean(report?.requirements?.length);
  }

  async function grade(mode, customInputs = null) {
    if (busy) return;
    setBusy(true);
    flush();
    const started = Date.now();
    const tick = () => {
      elapsed.textContent = `${Math.floor((Date.now() - started) / 1000)} s`;
    };
    tick();
    const timer = setInterval(tick, 1000);
    statusText.textContent = mode === 'run' ? 'Sending your code to run the published examples…' : 'Sending your code to be graded on all tests…';
    status.dataset.state = 'sending';
    try {
      let submission = await api('/v1/submissions', {
        method: 'POST',
        body: customInputs
          ? { problem_id: problem.id, source: editor.text(), mode, custom_inputs: customInputs }
          : { problem_id: problem.id, source: editor.text(), mode },
        signal,
      });
      submission = await pollSubmission(submission, {
        signal,
        onUpdate: (current, trouble) => {
          status.dataset.state = current.status;
          const text = STATUS_TEXT[current.status] ?? current.status;
          statusText.textContent = trouble ? `${text} (${trouble})` : text;
          if (current.status === 'done') clearInterval(timer); // the counter stops at the verdict
        },
      });
      clearInterval(timer);
      tick();
      lastVerdicts.save(submission);
      showResult(submission);
      attempts.refresh();
      status.dataset.state = 'done';
      statusText.textContent = `Done: ${verdictLabel(submission.verdict)}, score ${formatScore(submission.score, submission.max_score)}.`;
    } catch (err) {
      if (isAbort(err)) return;
      status.dataset.state = 'error';
      statusText.textContent = `Could not grade: ${err.message}`;
    } finally {
      clearInterval(timer);
      if (!signal.aborted) setBusy(false);
    }
  }

  attempts.refresh();
  ownButton.addEventListener('click', () => {
    let parsed;
    try {
      parsed = JSON.parse(ownInput.value);
    } catch (err) {
      ownError.textContent = `Not valid JSON: ${err.message}`;
      ownInput.focus();
      return;
    }
    ownError.textContent = '';
    grade('run', [parsed]);
  });
  runButton.addEventListener('click', () => grade('run'));
  submitButton.addEventListener('click', () => grade('submit'));
  // The shortcuts also work with the focus outside the editor (the editor handles its own).
  const onKey = (event) => {
    if (event.defaultPrevented || event.key !== 'Enter' || !(event.ctrlKey || event.metaKey)) return;
    if (document.querySelector('dialog[open]')) return;
    event.preventDefault();
    grade(event.shiftKey ? 'submit' : 'run');
  };
  document.addEventListener('keydown', onKey);
  onCleanup(() => document.removeEventListener('keydown', onKey));
}
