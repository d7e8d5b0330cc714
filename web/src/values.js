// Test data as a person reads it: nested number arrays printed row by row, and for a visible
// test, which entries of the output differ from the expected value by more than the problem's
// tolerance (the grader's rule: |got - expected| <= atol + rtol * |expected|).
import { h, srOnly } from './dom.js';

const isPlainObject = (v) => v !== null && typeof v === 'object' && !Array.isArray(v);

/** [[path, value]] for every leaf of a dict tree (arrays and numbers are leaves). */
export function leaves(value, path = '') {
  if (isPlainObject(value)) {
    return Object.entries(value).flatMap(([k, v]) => leaves(v, path ? `${path}.${k}` : k));
  }
  return [[path, value]];
}

export function shapeOf(value) {
  const shape = [];
  let v = value;
  while (Array.isArray(v)) {
    shape.push(v.length);
    v = v[0];
  }
  return shape;
}

export function formatNumber(v) {
  if (v === null) return 'NaN/inf';
  if (typeof v === 'boolean') return String(v);
  if (typeof v !== 'number') return JSON.stringify(v);
  if (Number.isInteger(v) && Math.abs(v) < 1e15) return String(v);
  const abs = Math.abs(v);
  if (abs !== 0 && (abs < 1e-4 || abs >= 1e6)) return v.toExponential(4).replace(/\.?0+e/, 'e');
  return String(Number(v.toPrecision(6)));
}

function withinTolerance(got, expected, tol) {
  if (typeof got !== 'number' || typeof expected !== 'number') return false;
  if (!Number.isFinite(got) || !Number.isFinite(expected)) return false;
  return Math.abs(got - expected) <= tol.atol + tol.rtol * Math.abs(expected);
}

/**
 * A leaf as a monospace block, one row per line. `bad(index path)` says which entries to mark;
 * marked entries get <mark> plus hidden text, so the highlight does not rely on colour alone.
 */
export function renderArray(value, bad = () => false) {
  const out = h('code', { class: 'array' });
  const walk = (v, index, depth) => {
    if (Array.isArray(v)) {
      out.append('[');
      v.forEach((item, i) => {
        if (i > 0) out.append(Array.isArray(item) ? `,\n${' '.repeat(depth + 1)}` : ', ');
        walk(item, [...index, i], depth + 1);
      });
      out.append(']');
      return;
    }
    const text = formatNumber(v);
    if (bad(index)) out.append(h('mark', { title: `exact value: ${v}` }, text, srOnly(' (differs)')));
    else out.append(text);
  };
  walk(value, [], 0);
  return out;
}

function at(value, index) {
  let v = value;
  for (const i of index) {
    if (!Array.isArray(v) || i >= v.length) return undefined;
    v = v[i];
  }
  return v;
}

/**
 * Expected vs got for one visible test. Returns {rows: [{path, expected, got, bad}], differing,
 * total}; each row's `bad(index)` marks entries of `got` beyond tolerance. A leaf whose shape
 * differs, or that is missing or unexpected, is wholly marked.
 */
export function compareOutputs(expected, got, tolerance) {
  const expectedLeaves = leaves(expected);
  const gotLeaves = new Map(got === undefined || got === null ? [] : leaves(got));
  const rows = [];
  let differing = 0;
  let total = 0;
  for (const [path, exp] of expectedLeaves) {
    const has = gotLeaves.has(path);
    const g = gotLeaves.get(path);
    gotLeaves.delete(path);
    const sameShape = has && shapeOf(exp).join() === shapeOf(g).join();
    let bad;
    if (!has || !sameShape) {
      bad = () => true;
    } else if (!tolerance) {
      bad = () => false;
    } else {
      bad = (index) => !withinTolerance(at(g, index), at(exp, index), tolerance);
    }
    const count = countEntries(exp);
    total += count;
    if (has) {
      let n = 0;
      forEachIndex(g, (index) => {
        if (bad(index)) n += 1;
      });
      differing += sameShape ? n : count;
    } else differing += count;
    rows.push({ path, expected: exp, got: g, present: has, sameShape, bad });
  }
  for (const [path, g] of gotLeaves) {
    rows.push({ path, expected: undefined, got: g, present: true, sameShape: false, bad: () => true, extra: true });
  }
  return { rows, differing, total };
}

function countEntries(v) {
  return Array.isArray(v) ? v.reduce((n, item) => n + countEntries(item), 0) : 1;
}

function forEachIndex(v, fn, index = []) {
  if (Array.isArray(v)) v.forEach((item, i) => forEachIndex(item, fn, [...index, i]));
  else fn(index);
}

export function shapeText(v) {
  return `(${shapeOf(v).join(', ')}${shapeOf(v).length === 1 ? ',' : ''})`;
}
