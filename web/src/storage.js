// What the browser keeps: the bearer token for this tab (sessionStorage), and per problem the
// draft and the learner's last verdict (localStorage). Storage can be full or disabled
// (private windows): every access degrades to "nothing stored".

const TOKEN = 'jaxjudge.token';
const draftKey = (problemId) => `jaxjudge.draft.${problemId}`;
const lastKey = (problemId) => `jaxjudge.last.${problemId}`;

function get(storage, key) {
  try {
    return storage.getItem(key);
  } catch {
    return null;
  }
}

function set(storage, key, value) {
  try {
    if (value === null) storage.removeItem(key);
    else storage.setItem(key, value);
    return true;
  } catch {
    return false;
  }
}

export const token = {
  get: () => get(sessionStorage, TOKEN),
  set: (value) => set(sessionStorage, TOKEN, value),
  clear: () => set(sessionStorage, TOKEN, null),
};

export const drafts = {
  get: (problemId) => get(localStorage, draftKey(problemId)),
  /** Stores the draft; a draft equal to the starter is removed instead. */
  save: (problemId, text, starter) =>
    set(localStorage, draftKey(problemId), text === starter ? null : text),
};

export const lastVerdicts = {
  get(problemId) {
    const raw = get(localStorage, lastKey(problemId));
    if (!raw) return null;
    try {
      const value = JSON.parse(raw);
      return value && typeof value.verdict === 'string' ? value : null;
    } catch {
      return null;
    }
  },
  save(submission) {
    const { id, verdict, mode, score, max_score: maxScore, finished_at: at } = submission;
    set(
      localStorage,
      lastKey(submission.problem_id),
      JSON.stringify({ id, verdict, mode, score, maxScore, at }),
    );
  },
};
