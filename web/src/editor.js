// The code editor: CodeMirror 6 with Python mode, colours from CSS variables (so it follows the
// light/dark theme and keeps AA contrast), Tab indenting (Escape then Tab leaves the editor,
// WCAG 2.1.2), and Mod-Enter / Mod-Shift-Enter bound to Run / Submit.
import { closeBrackets, closeBracketsKeymap } from '@codemirror/autocomplete';
import { defaultKeymap, history, historyKeymap, indentWithTab } from '@codemirror/commands';
import { python } from '@codemirror/lang-python';
import {
  bracketMatching,
  HighlightStyle,
  indentOnInput,
  indentUnit,
  syntaxHighlighting,
} from '@codemirror/language';
import { highlightSelectionMatches, searchKeymap } from '@codemirror/search';
import { EditorState, Prec, StateEffect, StateField } from '@codemirror/state';
import {
  Decoration,
  drawSelection,
  EditorView,
  highlightActiveLine,
  highlightActiveLineGutter,
  highlightSpecialChars,
  keymap,
  lineNumbers,
} from '@codemirror/view';
import { tags as t } from '@lezer/highlight';

const highlight = HighlightStyle.define([
  { tag: [t.keyword, t.controlKeyword, t.operatorKeyword, t.definitionKeyword, t.moduleKeyword], color: 'var(--hl-keyword)' },
  { tag: [t.string, t.special(t.string), t.docString], color: 'var(--hl-string)' },
  { tag: [t.comment, t.lineComment, t.blockComment], color: 'var(--hl-comment)', fontStyle: 'italic' },
  { tag: [t.number, t.bool, t.null, t.atom], color: 'var(--hl-number)' },
  { tag: [t.function(t.definition(t.variableName)), t.definition(t.className)], color: 'var(--hl-def)' },
  { tag: [t.standard(t.variableName), t.self], color: 'var(--hl-builtin)' },
  { tag: t.invalid, color: 'var(--bad)' },
]);

const theme = EditorView.theme({
  '&': { color: 'var(--fg)', backgroundColor: 'var(--code-bg)', height: '100%' },
  '.cm-content': { caretColor: 'var(--fg)', fontFamily: 'var(--mono)' },
  '.cm-scroller': { fontFamily: 'var(--mono)', lineHeight: '1.5' },
  '.cm-gutters': { backgroundColor: 'var(--code-bg)', color: 'var(--muted)', borderRight: '1px solid var(--border)' },
  '.cm-activeLine': { backgroundColor: 'var(--active-line)' },
  '.cm-activeLineGutter': { backgroundColor: 'var(--active-line)', color: 'var(--fg)' },
  '&.cm-focused .cm-cursor': { borderLeftColor: 'var(--fg)' },
  '&.cm-focused > .cm-scroller > .cm-selectionLayer .cm-selectionBackground, .cm-selectionBackground':
    { backgroundColor: 'var(--selection)' },
  '&.cm-focused': { outline: 'none' },
  '.cm-line.cm-errorLine': { backgroundColor: 'var(--error-line)', boxShadow: 'inset 3px 0 0 var(--bad)' },
  '.cm-matchingBracket': { outline: '1px solid var(--muted)', backgroundColor: 'transparent' },
  '.cm-panels': { backgroundColor: 'var(--panel)', color: 'var(--fg)' },
});

const setErrorLine = StateEffect.define();
const errorLine = StateField.define({
  create: () => Decoration.none,
  update(deco, tr) {
    for (const effect of tr.effects) {
      if (effect.is(setErrorLine)) {
        if (effect.value === null) return Decoration.none;
        const line = tr.state.doc.line(effect.value);
        return Decoration.set([Decoration.line({ class: 'cm-errorLine' }).range(line.from)]);
      }
    }
    return tr.docChanged ? Decoration.none : deco;
  },
  provide: (field) => EditorView.decorations.from(field),
});

/**
 * A read-only view of Python source with the editor's look (line numbers, highlighting, theme),
 * named `label` for assistive tech. Focusable, with the cursor keys, so keyboard users can read
 * and scroll it; Tab leaves it (no indenting keymap).
 */
export function viewerExtensions(label) {
  return [
    lineNumbers(),
    highlightSpecialChars(),
    drawSelection(),
    EditorState.readOnly.of(true),
    EditorState.tabSize.of(4),
    keymap.of(defaultKeymap),
    python(),
    syntaxHighlighting(highlight),
    theme,
    EditorView.contentAttributes.of({ tabindex: '0', 'aria-label': label, 'aria-readonly': 'true', translate: 'no' }),
  ];
}

/**
 * A new editor in `parent`. `labelledBy`/`describedBy` name the textbox for assistive tech;
 * onChange(text) fires on every edit; onRun/onSubmit on the shortcuts.
 */
export function createEditor({ parent, doc, labelledBy, describedBy, onChange, onRun, onSubmit }) {
  const shortcuts = Prec.highest(
    keymap.of([
      { key: 'Mod-Enter', run: () => (onRun(), true) },
      { key: 'Mod-Shift-Enter', run: () => (onSubmit(), true) },
    ]),
  );
  const view = new EditorView({
    parent,
    state: EditorState.create({
      doc,
      extensions: [
        shortcuts,
        lineNumbers(),
        highlightActiveLineGutter(),
        highlightSpecialChars(),
        history(),
        drawSelection(),
        indentOnInput(),
        indentUnit.of('    '),
        EditorState.tabSize.of(4),
        bracketMatching(),
        closeBrackets(),
        highlightActiveLine(),
        highlightSelectionMatches(),
        keymap.of([...closeBracketsKeymap, ...defaultKeymap, ...searchKeymap, ...historyKeymap, indentWithTab]),
        python(),
        syntaxHighlighting(highlight),
        theme,
        errorLine,
        EditorView.contentAttributes.of({
          // Already in the tab order (contenteditable); the explicit tabindex lets checkers
          // such as axe-core see that the scrollable editor has keyboard access.
          tabindex: '0',
          'aria-labelledby': labelledBy,
          'aria-describedby': describedBy,
          spellcheck: 'false',
          autocapitalize: 'off',
          autocorrect: 'off',
          translate: 'no',
        }),
        EditorView.updateListener.of((update) => {
          if (update.docChanged) onChange(update.state.doc.toString());
        }),
      ],
    }),
  });
  return {
    view,
    text: () => view.state.doc.toString(),
    setText(text) {
      view.dispatch({ changes: { from: 0, to: view.state.doc.length, insert: text } });
    },
    focus: () => view.focus(),
    /** Put the cursor on line `n` (1-based), mark it, scroll it into view and focus. */
    showLine(n) {
      const number = Math.min(Math.max(1, n), view.state.doc.lines);
      const line = view.state.doc.line(number);
      view.dispatch({
        selection: { anchor: line.from },
        effects: [setErrorLine.of(number), EditorView.scrollIntoView(line.from, { y: 'center' })],
      });
      view.focus();
    },
    destroy: () => view.destroy(),
  };
}
