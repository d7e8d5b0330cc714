"""The browser page end to end: Debian's Chromium, driven by Playwright, against a real
`jaxjudge serve` on loopback with real grades. Every state a learner sees is saved as a
screenshot under tests/artifacts/web/, and axe-core checks every page (zero serious or critical
violations, light and dark). One server and one browser serve the whole module.

Also here: the committed build in jaxjudge/service/static/ must be what web/ builds (skipped without
npm).
"""

from __future__ import annotations

import filecmp
import json
import os
import re
import shutil
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest
from api_fixtures import BROKEN, PROBLEM, Server, submit, wait_done

REPO = Path(__file__).resolve().parent.parent
WEB = REPO / "web"
STATIC = REPO / "jaxjudge" / "service" / "static"
ARTIFACTS = REPO / "tests" / "artifacts" / "web"
SUBMISSIONS = REPO / "problems" / PROBLEM / "submissions"
AXE_COMMITTED = REPO / "tests" / "data" / "axe-core" / "axe.min.js"
AXE_NODE = WEB / "node_modules" / "axe-core" / "axe.min.js"
# The report's table of tests (the memory table shares its look, class "tests").
TEST_TABLE = "table.tests:not(.memory-table)"
CHROMIUM = Path(os.environ.get("JAXJUDGE_TEST_CHROMIUM", "/usr/bin/chromium"))
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run",
]
GRADE_MS = 180_000  # a guard against hanging, not a performance assertion
TOKEN = "web-test-token"

# A correct solution written the way the reference is (problems/<id>/reference.py), short
# enough to type key by key. No docstrings: the editor closes quotes and brackets as you type.
SOLUTION = """import jax
import jax.numpy as jnp


def block(params, x):
    h = jnp.tanh(x @ params["w1"] + params["b1"])
    return x + h @ params["w2"] + params["b2"]


remat_block = jax.checkpoint(block, policy=jax.checkpoint_policies.dots_saveable)


def loss_fn(params, x, y):
    return jnp.mean((remat_block(params, x) - y) ** 2)


def solve(params, x, y):
    loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
    return {"loss": loss, "grads": grads}
"""

pytestmark = pytest.mark.slow


# A second problem package, made for this module: the page must work with every problem the
# server holds, and a statement's raw HTML must stay text (markdown-it with html off).
PROBE = "markup-probe"
PROBE_STATEMENT = r"""# Markup probe

Raw HTML stays text: <img src="x" onerror="window.__probe = 1"> and <b>not bold</b>.

<script>window.__probe = 2</script>

A [javascript link](javascript:window.__probe=3) is not a link. Inline math $a^2 + b^2$;
prices such as $5 and $6 stay text, and so does an escaped \$x\$.

$$
\sum_{i=1}^{n} x_i
$$

| key | value |
|-----|-------|
| `w1` | $W_1$ |
"""


def make_problems_root(root: Path) -> Path:
    """The seed problem (linked) and the probe (a copy of the seed with its own id, title and
    statement), as a JAXJUDGE_PROBLEMS_DIR."""
    root.mkdir()
    (root / PROBLEM).symlink_to(REPO / "problems" / PROBLEM)
    probe = root / PROBE
    shutil.copytree(REPO / "problems" / PROBLEM, probe,
                    ignore=shutil.ignore_patterns("submissions"))
    toml = (probe / "problem.toml").read_text(encoding="utf-8")
    toml = re.sub(r'(?m)^id = ".*"$', f'id = "{PROBE}"', toml)
    toml = re.sub(r'(?m)^title = ".*"$', 'title = "Markup Probe"', toml)
    toml = re.sub(r'(?m)^difficulty = ".*"$', 'difficulty = "hard"', toml)
    (probe / "problem.toml").write_text(toml, encoding="utf-8")
    (probe / "statement.md").write_text(PROBE_STATEMENT, encoding="utf-8")
    return root


# -- fixtures -----------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def server(browser: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    # Asks for the browser first, so that a machine without one skips before any server starts.
    workdir = tmp_path_factory.mktemp("web")
    root = make_problems_root(workdir / "problems")
    srv = Server(workdir, via_cli=True, database_url=f"sqlite:///{workdir}/judge.db",
                 workers=2, queue_size=50, problems_dir=root)
    yield srv
    srv.stop()


@pytest.fixture(scope="module")
def auth_server(browser: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    workdir = tmp_path_factory.mktemp("web-auth")
    srv = Server(workdir, via_cli=True, database_url=f"sqlite:///{workdir}/judge.db",
                 workers=1, warm_pool="false", auth_tokens=TOKEN)
    yield srv
    srv.stop()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    sync_api = pytest.importorskip(
        "playwright.sync_api", reason="playwright is not installed (pip install -e '.[dev]')"
    )
    if not CHROMIUM.is_file():
        pytest.skip(f"no Chromium at {CHROMIUM} (apt-get install chromium)")
    with sync_api.sync_playwright() as pw:
        launched = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield launched
        launched.close()


def axe_source() -> str:
    """axe-core from web/node_modules when installed (the locked version), else the copy
    committed for machines without Node (test_committed_build_matches_sources keeps them equal)."""
    return (AXE_NODE if AXE_NODE.is_file() else AXE_COMMITTED).read_text(encoding="utf-8")


class Tab:
    """One browser context and page, recording what must never happen: a script error, a
    console error, or a request to anything but the server (no CDN, works offline)."""

    def __init__(self, browser: Any, base_url: str, **context: Any) -> None:
        context.setdefault("viewport", {"width": 1280, "height": 900})
        self.base_url = base_url
        self.context = browser.new_context(base_url=base_url, **context)
        # An init script runs outside the page's CSP (which rightly forbids inline scripts).
        self.context.add_init_script(script=axe_source())
        self.page = self.context.new_page()
        self.page.set_default_timeout(30_000)
        self.errors: list[str] = []
        self.foreign: list[str] = []
        self.allowed_console: list[re.Pattern[str]] = []
        self.page.on("pageerror", lambda exc: self.errors.append(f"pageerror: {exc}"))
        self.page.on("console", self._console)
        self.page.on("request", self._request)

    def _console(self, message: Any) -> None:
        if message.type == "error" and not any(
            p.search(message.text) for p in self.allowed_console
        ):
            self.errors.append(f"console: {message.text}")

    def _request(self, request: Any) -> None:
        url = request.url
        if not (url.startswith(self.base_url + "/") or url.startswith("data:")):
            self.foreign.append(url)

    def shot(self, name: str, at: str | None = None) -> None:
        """A screenshot of the viewport, after scrolling the element `at` (a selector) into
        view: what a person sees at that moment."""
        if at:
            self.page.locator(at).first.scroll_into_view_if_needed()
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        self.page.screenshot(path=str(ARTIFACTS / f"{name}.png"))

    def axe(self, name: str) -> None:
        """axe-core on the page as it is now: no serious or critical violation. The full
        result (minor and moderate included) is saved beside the screenshots."""
        violations = self.page.evaluate(
            """async () => {
                const r = await axe.run(document, {resultTypes: ['violations']});
                return r.violations.map(v => ({id: v.id, impact: v.impact, help: v.help,
                    nodes: v.nodes.slice(0, 5).map(n => n.target.join(' '))}));
            }"""
        )
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        (ARTIFACTS / f"axe-{name}.json").write_text(json.dumps(violations, indent=2))
        bad = [v for v in violations if v["impact"] in ("serious", "critical")]
        assert not bad, f"axe-core on {name}: {json.dumps(bad, indent=2)}"

    def axe_both_themes(self, name: str) -> None:
        self.axe(name)
        self.page.emulate_media(color_scheme="dark")
        try:
            self.axe(f"{name}-dark")
        finally:
            self.page.emulate_media(color_scheme="light")

    def close(self) -> None:
        self.context.close()
        assert not self.errors, self.errors
        assert not self.foreign, f"requests left the server: {self.foreign}"


@pytest.fixture
def open_tab(browser: Any) -> Iterator[Callable[..., Tab]]:
    tabs: list[Tab] = []

    def make(base_url: str, **context: Any) -> Tab:
        tab = Tab(browser, base_url, **context)
        tabs.append(tab)
        return tab

    yield make
    for tab in tabs:
        tab.close()


# -- helpers ------------------------------------------------------------------------------------
def problems(server: Server) -> list[dict[str, Any]]:
    with server.client() as c:
        listed: list[dict[str, Any]] = c.get("/v1/problems").json()
        return [c.get(f"/v1/problems/{p['id']}").json() for p in listed]


def editor_text(page: Any) -> str:
    """The editor's document as CodeMirror shows it (one .cm-line per line; short documents
    are rendered whole). Only the solution editor's: a closing Compare dialog leaves the role
    tree before its two read-only editors leave the page."""
    lines: list[str] = page.locator(".editor-frame .cm-content .cm-line").all_text_contents()
    return "\n".join(lines).replace("\u200b", "")


def draft(page: Any, problem_id: str = PROBLEM) -> str | None:
    value: str | None = page.evaluate(
        f"localStorage.getItem('jaxjudge.draft.{problem_id}')"
    )
    return value


def wait_draft(page: Any, want: str, problem_id: str = PROBLEM) -> None:
    """Wait until the page has saved `want` as its draft: a restore writes the editor and the
    draft in the page's next task, not before the confirming click returns."""
    page.wait_for_function(  # a function, not a string: the page's CSP forbids eval
        "([key, want]) => localStorage.getItem(key) === want",
        arg=[f"jaxjudge.draft.{problem_id}", want],
        timeout=5000,
    )


def type_code(page: Any, code: str) -> None:
    """Type `code` key by key into the focused editor. The editor indents after Enter; selecting
    back to the line start (Shift+Home) lets each typed line bring its own indentation."""
    for i, line in enumerate(code.split("\n")):
        if i:
            page.keyboard.press("Enter")
            page.keyboard.press("Shift+Home")
            if not line:
                page.keyboard.press("Delete")
        if line:
            page.keyboard.type(line)


def show_code(page: Any) -> None:
    """On a narrow screen, the Code tab (the editor is one tap away); nothing on a wide one."""
    page.locator(".problem-layout").wait_for(state="attached")
    tab = page.get_by_role("tab", name="Code")
    if tab.is_visible():
        tab.click()


def replace_code(page: Any, code: str) -> None:
    """Select all and insert `code` as one input (like a paste)."""
    show_code(page)
    page.locator(".editor-frame .cm-content").click()
    page.keyboard.press("Control+a")
    page.keyboard.insert_text(code)


def wait_report(page: Any, mode: str) -> Any:
    """The report of the grade just started: waits until the status says done."""
    page.wait_for_selector("#grade-status[data-state='done']", timeout=GRADE_MS)
    report = page.locator("#result .report")
    assert report.count() == 1
    assert (mode == "run") == ("published examples" in report.locator(".verdict-line").inner_text())
    return report


# -- the problem list and every problem's page --------------------------------------------------
def test_problem_list(server: Server, open_tab: Callable[..., Tab]) -> None:
    tab = open_tab(server.base_url)
    page = tab.page
    page.goto("/")
    page.get_by_role("heading", level=1, name="Problems").wait_for()
    for p in problems(server):
        card = page.locator(f"li.card[data-problem='{p['id']}']")
        link = card.get_by_role("link", name=p["title"])
        assert link.get_attribute("href") == f"/problems/{p['id']}"
        text = card.inner_text()
        assert p["difficulty"] in text and all(t in text for t in p["tags"])
        assert "not attempted in this browser" in text
    tab.shot("01-problem-list")
    tab.axe_both_themes("problem-list")


def test_every_problem_page(server: Server, open_tab: Callable[..., Tab]) -> None:
    """Not only the seed's: every problem the server holds renders its statement with typeset
    math, its examples, constraints and checklist, and the editor holds its starter."""
    tab = open_tab(server.base_url)
    page = tab.page
    held = problems(server)
    assert {p["id"] for p in held} == {PROBLEM, PROBE}
    for p in held:
        page.goto(f"/problems/{p['id']}")
        page.locator(".cm-content").wait_for()
        assert page.get_by_role("heading", level=1).inner_text() == p["title"]
        statement = page.locator(".statement")
        if "$" in p["statement"]:
            assert statement.locator(".katex math").count() > 0, "math was not typeset"
            assert "$$" not in statement.inner_text()
        assert page.locator("details.example").count() == len(p["examples"])
        for text in p["constraints"].get("text", []):
            assert text in page.locator("section.constraints").inner_text()
        items = page.locator(".pending-checklist li.req")
        assert items.count() == len(p["requirements"])
        assert all(s == "pending" for s in [items.nth(i).get_attribute("data-state")
                                             for i in range(items.count())])
        assert editor_text(page) == p["starter"]
        assert draft(page, p["id"]) is None  # an untouched starter is not a draft
        assert page.evaluate("window.__probe") is None
        assert statement.locator("img, script, b").count() == 0
        assert statement.locator("a[href^='javascript']").count() == 0
        tab.shot(f"02-problem-{p['id']}")
        tab.axe_both_themes(f"problem-{p['id']}")

    # The probe's statement: its raw HTML is shown as text, math is typeset, dollars stay text.
    page.goto(f"/problems/{PROBE}")
    text = page.locator(".statement").inner_text()
    assert '<img src="x" onerror="window.__probe = 1">' in text and "<b>not bold</b>" in text
    assert "<script>window.__probe = 2</script>" in text
    assert "prices such as $5 and $6 stay text" in text and "escaped $x$" in text
    assert page.locator(".statement .katex").count() == 3  # a^2 + b^2, the sum, W_1
    assert page.locator(".statement .math-display .katex-display").count() == 1
    assert page.evaluate("window.__probe") is None


# -- solving the seed problem -------------------------------------------------------------------
def test_solve_with_the_keyboard(server: Server, open_tab: Callable[..., Tab]) -> None:
    tab = open_tab(server.base_url)
    page = tab.page
    page.goto("/")
    page.get_by_role("link", name="Rematerialized MLP Block").click()
    page.locator(".cm-content").wait_for()
    assert page.url.endswith(f"/problems/{PROBLEM}")

    page.locator(".cm-content").click()
    page.keyboard.press("Control+a")
    page.keyboard.press("Delete")
    type_code(page, SOLUTION)
    page.wait_for_function(  # a function, not a string: the page's CSP forbids eval
        "([key, want]) => localStorage.getItem(key) === want",
        arg=[f"jaxjudge.draft.{PROBLEM}", SOLUTION],
        timeout=5000,
    )
    assert editor_text(page) == SOLUTION
    tab.shot("03-typed-solution", at=".editor-frame")

    # Run with the shortcut, from inside the editor: a live status first, then three examples.
    page.keyboard.press("Control+Enter")
    status = page.locator("#grade-status")
    assert status.get_attribute("data-state") in ("sending", "queued", "running")
    assert status.inner_text().strip()
    tab.shot("04-run-in-progress", at=".status-row")
    report = wait_report(page, "run")
    assert report.get_attribute("data-verdict") == "accepted"
    rows = report.locator(f"{TEST_TABLE} tbody tr")
    assert rows.count() == 3
    assert [rows.nth(i).get_attribute("data-verdict") for i in range(3)] == ["accepted"] * 3
    assert report.locator("table.compare mark").count() == 0  # nothing beyond tolerance
    tab.shot("05-run-accepted", at="#result .report")

    # Submit with the button: every test, accepted with the full score.
    page.get_by_role("button", name="Submit").click()
    report = wait_report(page, "submit")
    assert report.get_attribute("data-verdict") == "accepted"
    link = page.get_by_role("link", name="Open the full report").get_attribute("href")
    with server.client() as c:
        newest = c.get(f"/v1/{link.lstrip('/')}").json()
    assert newest["mode"] == "submit" and newest["verdict"] == "accepted"
    score = f"{newest['score']:g} / {newest['max_score']:g}"
    assert f"Score {score}" in report.locator(".verdict-line").inner_text()
    assert f"score {score}" in status.inner_text()
    reqs = report.locator("li.req")
    assert reqs.count() == 2 and report.locator("li.req[data-state='pass']").count() == 2
    assert "Hidden tests" in report.locator("details.hidden-tests summary").inner_text()
    tab.shot("06-submit-accepted", at="#result .report")
    tab.axe_both_themes("problem-accepted")
    page.emulate_media(color_scheme="dark")
    tab.shot("07-submit-accepted-dark", at="#result .report")
    page.emulate_media(color_scheme="light")

    # Keyboard: Escape then Tab leaves the editor (no keyboard trap).
    page.locator(".cm-content").click()
    page.keyboard.press("Escape")
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.id") == "run"  # the next control

    # Reload: the draft is still there; the list shows the last verdict.
    page.reload()
    page.locator(".cm-content").wait_for()
    assert editor_text(page) == SOLUTION
    assert "restored" in page.locator(".draft-note").inner_text()
    page.get_by_role("link", name="Problems", exact=True).click()
    card = page.locator(f"li.card[data-problem='{PROBLEM}']")
    card.locator(".last-verdict [data-verdict='accepted']").wait_for()
    assert "on Submit" in card.locator(".last-verdict").inner_text()
    tab.shot("08-list-with-last-verdict")

    # Reset to starter asks first; "Keep my code" keeps it.
    page.get_by_role("link", name="Rematerialized MLP Block").click()
    page.locator(".cm-content").wait_for()
    page.get_by_role("button", name="Reset to starter").click()
    dialog = page.get_by_role("dialog")
    dialog.wait_for()
    assert page.evaluate("document.activeElement.textContent") == "Keep my code"  # safe default
    tab.shot("09-reset-confirmation")
    tab.axe("reset-confirmation")
    dialog.get_by_role("button", name="Keep my code").click()
    assert editor_text(page) == SOLUTION and draft(page) == SOLUTION
    page.get_by_role("button", name="Reset to starter").click()
    page.get_by_role("dialog").get_by_role("button", name="Reset", exact=True).click()
    starter = next(p["starter"] for p in problems(server) if p["id"] == PROBLEM)
    assert editor_text(page) == starter
    assert draft(page) is None


def test_checkpoint_without_policy_fails_its_requirement(
    server: Server, open_tab: Callable[..., Tab]
) -> None:
    tab = open_tab(server.base_url)
    page = tab.page
    page.goto(f"/problems/{PROBLEM}")
    replace_code(page, (SUBMISSIONS / "req_no_policy.py").read_text())
    page.get_by_role("button", name="Submit").click()
    report = wait_report(page, "submit")
    assert report.get_attribute("data-verdict") == "requirement_failed"
    spec = report.locator("li.req[data-requirement='differentiated-checkpoint']")
    assert spec.get_attribute("data-state") == "fail"
    assert "no policy" in spec.locator(".req-message").inner_text()  # the policy found
    program = report.locator("li.req[data-requirement='tanh-rematerialized']")
    assert program.get_attribute("data-state") == "fail"
    assert "recomputes x @ params['w1'] too" in program.locator(".req-message").inner_text()
    # Under each requirement, the program part it refers to: open where it failed, the
    # forward tanh marked (escaped text: the ops came out of a sandbox).
    part = program.locator("details.evidence")
    assert part.get_attribute("open") is not None
    assert "input shapes" in part.locator("summary").inner_text()
    marked = part.locator("pre.evidence-code mark.focus").all_inner_texts()
    assert marked and all("stablehlo.tanh" in line for line in marked)
    assert spec.locator("details.evidence pre").inner_text() == part.locator("pre").inner_text()
    # The submission's line those ops came from: a button that moves the editor's cursor there.
    source = (SUBMISSIONS / "req_no_policy.py").read_text()
    tanh_line = next(i for i, t in enumerate(source.splitlines(), 1) if "jnp.tanh(" in t)
    button = program.locator("button.source-line")
    assert button.all_inner_texts() == [f"submission.py:{tanh_line}"]
    button.click()
    assert page.locator(".cm-errorLine").inner_text() == source.splitlines()[tanh_line - 1]
    assert page.evaluate("!!document.activeElement.closest('.cm-editor')")
    cursor_line = page.evaluate(
        "(n => (n.nodeType === 1 ? n : n.parentElement).closest('.cm-line').textContent)"
        "(document.getSelection().anchorNode)")
    assert cursor_line == source.splitlines()[tanh_line - 1]
    # One summary line above the details instead of the paragraph repeating both messages.
    summary = report.locator(".summary-line").inner_text()
    assert summary.startswith("0 of 2 requirements hold; tanh-rematerialized failed:"), summary
    assert report.locator("pre.message").count() == 0
    assert report.inner_text().count(spec.locator(".req-message").inner_text()) == 1
    # The numbers were right: every test (3 published, the rest hidden) passed.
    tests = report.locator(f"{TEST_TABLE} tbody tr")
    assert tests.count() > 3
    accepted = report.locator(f"{TEST_TABLE} tbody tr[data-verdict='accepted']")
    assert accepted.count() == tests.count()
    tab.shot("10-requirement-failed", at="#result .report .checklist")
    tab.axe("problem-requirement-failed")


def test_syntax_error_shows_the_line(server: Server, open_tab: Callable[..., Tab]) -> None:
    tab = open_tab(server.base_url)
    page = tab.page
    page.goto(f"/problems/{PROBLEM}")
    source = (SUBMISSIONS / "compile_error_syntax.py").read_text()
    replace_code(page, source)
    page.get_by_role("button", name="Run examples").click()
    report = wait_report(page, "run")
    assert report.get_attribute("data-verdict") == "compile_error"
    message = report.locator("pre.message").inner_text()
    assert 'File "submission.py", line 6' in message and "SyntaxError" in message
    page.get_by_role("button", name="Show line 6 in the editor").click()
    active = page.locator(".cm-errorLine")
    assert active.count() == 1
    assert active.inner_text() == source.splitlines()[5]
    assert page.evaluate("!!document.activeElement.closest('.cm-editor')")
    assert report.locator(f"{TEST_TABLE} tbody tr[data-verdict='skipped']").count() == 3
    tab.shot("11-syntax-error", at="#result .report")
    tab.axe("problem-syntax-error")


def beyond_tolerance(expected: Any, got: Any, tol: dict[str, float]) -> dict[str, int]:
    """Per output leaf, how many entries of `got` the grader's rule rejects (the page must mark
    exactly these): |got - expected| <= atol + rtol * |expected|; NaN (null) never matches."""
    if isinstance(expected, dict):
        return {f"{k}.{path}" if path else k: n
                for k, v in expected.items()
                for path, n in beyond_tolerance(v, (got or {}).get(k), tol).items()}
    e = np.asarray(expected, dtype=float)
    g = np.asarray(got, dtype=float)
    if g.shape != e.shape:
        return {"": int(g.size)}
    ok = np.abs(g - e) <= tol["atol"] + tol["rtol"] * np.abs(e)
    return {"": int((~ok).sum())}


def test_wrong_answer_highlights_entries_beyond_tolerance(
    server: Server, open_tab: Callable[..., Tab]
) -> None:
    """wrong_forgets_b2 gets grads.b2 wrong, and with it the loss and other gradients: every
    leaf marks exactly the entries the grader's tolerance rule rejects, no more, no fewer."""
    tab = open_tab(server.base_url)
    page = tab.page
    page.goto(f"/problems/{PROBLEM}")
    replace_code(page, (SUBMISSIONS / "wrong_forgets_b2.py").read_text())
    page.get_by_role("button", name="Run examples").click()
    report = wait_report(page, "run")
    assert report.get_attribute("data-verdict") == "wrong_answer"
    link = page.get_by_role("link", name="Open the full report").get_attribute("href")
    with server.client() as c:
        graded = c.get(f"/v1/{link.lstrip('/')}").json()["report"]
        tol = c.get(f"/v1/problems/{PROBLEM}").json()["tolerance"]
    for test in graded["tests"]:
        details = report.locator(f"details.test-details[data-test='{test['name']}']")
        assert details.get_attribute("open") is not None  # failing tests open by default
        rows = details.locator("table.compare tbody tr")
        marked = {rows.nth(i).locator("th").inner_text():
                  rows.nth(i).locator("td").nth(1).locator("mark").count()
                  for i in range(rows.count())}
        want = beyond_tolerance(test["details"]["expected"], test["details"]["got"], tol)
        assert marked == want, test["name"]
        assert want["grads.b2"] == len(test["details"]["expected"]["grads"]["b2"])
    details = report.locator("details.test-details[data-test='example-1']")
    assert "differ by more than the tolerance" in details.locator(".compare-summary").inner_text()
    details.locator("details.inputs summary").click()
    assert "params.w1" in details.locator("details.inputs").inner_text()
    tab.shot("12-wrong-answer", at="details.test-details[data-test='example-1']")
    tab.axe_both_themes("problem-wrong-answer")


# -- phone --------------------------------------------------------------------------------------
def test_phone_viewport(server: Server, open_tab: Callable[..., Tab]) -> None:
    tab = open_tab(server.base_url, viewport={"width": 375, "height": 812}, is_mobile=True,
                   has_touch=True)
    page = tab.page

    def no_horizontal_scroll() -> None:
        width = page.evaluate("document.documentElement.scrollWidth")
        assert width <= 375, f"the page is {width} px wide at a 375 px viewport"

    page.goto("/")
    page.locator("li.card").first.wait_for()
    no_horizontal_scroll()
    tab.shot("13-phone-list")
    page.get_by_role("link", name="Rematerialized MLP Block").tap()
    page.locator(".statement").wait_for()
    no_horizontal_scroll()
    # Statement / Code tabs: the statement first, the editor one tap away, not below it.
    assert page.locator(".cm-content").is_hidden()
    tab.shot("14-phone-statement")
    page.get_by_role("tab", name="Code").tap()
    page.locator(".cm-content").wait_for()
    assert page.locator(".statement").is_hidden()
    assert page.get_by_role("tab", name="Code").get_attribute("aria-selected") == "true"
    editor = page.locator(".editor-frame").bounding_box()
    assert editor and editor["width"] <= 375 and editor["height"] >= 200
    tab.shot("14-phone-problem")
    tab.shot("14-phone-editor", at=".workspace .actions")
    tab.axe("phone-problem")
    replace_code(page, BROKEN)
    page.get_by_role("button", name="Run examples").tap()
    wait_report(page, "run")
    no_horizontal_scroll()
    tab.shot("15-phone-result", at="#result .report")
    tab.axe("phone-result")


# -- submissions --------------------------------------------------------------------------------
def test_submissions_page_filters(server: Server, open_tab: Callable[..., Tab]) -> None:
    sources = {"broken": BROKEN, "forgets_b2": (SUBMISSIONS / "wrong_forgets_b2.py").read_text()}
    ids = {}
    with server.client() as c:
        for name, source in sources.items():
            r = submit(c, source, mode="run")
            assert r.status_code == 202, r.text
            ids[name] = wait_done(c, r.json()["id"])["id"]
        compile_errors = c.get(
            "/v1/submissions", params={"verdict": "compile_error", "limit": 100}
        ).json()
    tab = open_tab(server.base_url)
    page = tab.page
    page.goto("/submissions")
    table = page.locator("table.submissions")
    table.wait_for()
    all_rows = table.locator("tbody tr")
    assert all_rows.count() >= 2
    shown = {all_rows.nth(i).get_attribute("data-submission") for i in range(all_rows.count())}
    assert set(ids.values()) <= shown
    tab.shot("16-submissions")
    tab.axe_both_themes("submissions")

    page.get_by_label("Verdict").select_option("compile_error")
    page.get_by_label("Problem").select_option(PROBLEM)
    page.get_by_role("button", name="Apply filters").click()
    page.wait_for_url(re.compile(r"verdict=compile_error"))
    table.wait_for()
    rows = table.locator("tbody tr")
    verdicts = [rows.nth(i).get_attribute("data-verdict") for i in range(rows.count())]
    assert verdicts and set(verdicts) == {"compile_error"}
    assert len(verdicts) == len(compile_errors["items"])
    assert f"problem_id={PROBLEM}" in page.url
    tab.shot("17-submissions-filtered")

    # Reload keeps the filters (they live in the URL); a link opens the full report.
    page.reload()
    assert page.get_by_label("Verdict").input_value() == "compile_error"
    page.locator(f"tr[data-submission='{ids['broken']}'] a").first.click()
    page.get_by_role("heading", level=1, name=re.compile("Submission")).wait_for()
    report = page.locator(".report")
    report.wait_for()
    assert report.get_attribute("data-verdict") == "compile_error"
    assert "SyntaxError" in report.locator("pre.message").inner_text()
    tab.shot("18-submission-report")
    tab.axe("submission-report")

    page.goto(f"/submissions/{ids['forgets_b2']}")
    report.wait_for()
    assert report.get_attribute("data-verdict") == "wrong_answer"
    assert report.locator("details.test-details[data-test='example-1'] mark").count() >= 2
    tab.axe("submission-report-wrong-answer")

    tab.allowed_console.append(re.compile(r"status of 404"))  # the API's answer, expected
    page.goto("/submissions/no-such-submission")
    page.get_by_role("heading", level=1, name="Not found").wait_for()
    assert "unknown submission" in page.get_by_role("alert").inner_text()


# -- auth ---------------------------------------------------------------------------------------
def test_auth_on_asks_for_a_token(auth_server: Server, open_tab: Callable[..., Tab]) -> None:
    base = auth_server.base_url
    # The page itself needs no token; the API does.
    html = httpx.get(f"{base}/", timeout=30)
    assert html.status_code == 200 and "<main" in html.text
    assert "script-src 'self'" in html.headers["content-security-policy"]
    asset = re.search(r'src="(/assets/[^"]+\.js)"', html.text)
    assert asset
    script = httpx.get(base + asset.group(1), timeout=30)
    assert script.status_code == 200 and "immutable" in script.headers["cache-control"]
    assert httpx.get(f"{base}/problems/{PROBLEM}", timeout=30).status_code == 200
    assert httpx.get(f"{base}/v1/problems", timeout=30).status_code == 401

    tab = open_tab(base)
    tab.allowed_console.append(re.compile(r"status of 401"))
    page = tab.page
    page.goto("/")
    dialog = page.get_by_role("dialog", name="Access token")
    dialog.wait_for()
    tab.shot("19-token-prompt")
    tab.axe("token-prompt")
    dialog.get_by_label("Token").fill("not-the-token")
    dialog.get_by_role("button", name="Use token").click()
    dialog.get_by_role("alert").wait_for()
    assert "refused" in dialog.get_by_role("alert").inner_text()
    tab.shot("20-token-refused")
    dialog.get_by_label("Token").fill(TOKEN)
    dialog.get_by_role("button", name="Use token").click()
    page.locator(f"li.card[data-problem='{PROBLEM}']").wait_for()
    assert page.evaluate("sessionStorage.getItem('jaxjudge.token')") == TOKEN
    assert page.get_by_role("button", name="Forget token").is_visible()

    page.reload()
    page.locator("li.card").first.wait_for()
    assert page.get_by_role("dialog").count() == 0
    page.get_by_role("link", name="Submissions", exact=True).click()
    page.get_by_role("heading", level=1, name="Submissions").wait_for()
    assert page.get_by_role("dialog").count() == 0
    tab.shot("21-submissions-with-token")

    # Cancel: the page says what it needs and offers the prompt again.
    page.get_by_role("button", name="Forget token").click()
    dialog.wait_for()
    dialog.get_by_role("button", name="Cancel").click()
    page.get_by_role("heading", level=1, name="Access token needed").wait_for()
    page.get_by_role("button", name="Enter a token").click()
    dialog.get_by_label("Token").fill(TOKEN)
    dialog.get_by_role("button", name="Use token").click()
    page.get_by_role("heading", level=1, name="Submissions").wait_for()

    # The token is kept for the tab only: another tab (a new session) asks again.
    other = open_tab(base)
    other.allowed_console.append(re.compile(r"status of 401"))
    other.page.goto("/")
    other.page.get_by_role("dialog", name="Access token").wait_for()


# -- the committed build ------------------------------------------------------------------------
def _node_version() -> tuple[int, ...] | None:
    node = shutil.which("node")
    if not node:
        return None
    out = subprocess.run([node, "--version"], capture_output=True, text=True, timeout=30)
    return tuple(int(x) for x in re.findall(r"\d+", out.stdout)[:3])


def test_committed_build_matches_sources(tmp_path: Path) -> None:
    """jaxjudge/service/static/ is exactly what `make web` builds from web/ (sources + lockfile), so
    the committed bundle can be trusted to be the reviewed code. Rebuilt in a temporary folder."""
    version = _node_version()
    if shutil.which("npm") is None or version is None:
        pytest.skip("npm is not installed: cannot rebuild web/ to compare with "
                    "jaxjudge/service/static/")
    if version < (20, 19):
        pytest.skip(f"Node {'.'.join(map(str, version))} is older than vite 7 needs (20.19)")
    src = tmp_path / "web"
    shutil.copytree(WEB, src, ignore=shutil.ignore_patterns("node_modules"))
    if (WEB / "node_modules").is_dir():
        (src / "node_modules").symlink_to(WEB / "node_modules")
    else:
        subprocess.run(["npm", "ci", "--no-audit", "--no-fund"], cwd=src, check=True,
                       capture_output=True, timeout=600)
    out = tmp_path / "out"
    started = time.monotonic()
    build = subprocess.run(
        ["npx", "--no-install", "vite", "build", "--outDir", str(out), "--emptyOutDir"],
        cwd=src, capture_output=True, text=True, timeout=600,
    )
    assert build.returncode == 0, build.stdout + build.stderr
    assert time.monotonic() - started < 300
    built = sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file())
    committed = sorted(p.relative_to(STATIC).as_posix() for p in STATIC.rglob("*") if p.is_file())
    hint = "jaxjudge/service/static/ is stale: run `make web` and commit jaxjudge/service/static/"
    assert built == committed, f"{hint}\nbuilt: {built}\ncommitted: {committed}"
    different = [f for f in built if not filecmp.cmp(out / f, STATIC / f, shallow=False)]
    assert not different, f"{hint}\ndiffering: {different}"
    node_axe = src / "node_modules" / "axe-core" / "axe.min.js"
    assert filecmp.cmp(node_axe, AXE_COMMITTED, shallow=False), (
        "tests/data/axe-core/axe.min.js differs from the locked axe-core: run `make web`"
    )


# -- my attempts (#23 item 3) ---------------------------------------------------------------------
def test_my_attempts_compare_and_restore(server: Server, open_tab: Callable[..., Tab]) -> None:
    """The page's browser identity owns what it submits: its attempts are listed with their
    verdicts, compared with the editor and restored into it; another browser sees none."""
    attempt = "def solve(params, x, y):\n    return 1 +\n"  # a compile error: the fastest grade
    for width, label in ((1280, "wide"), (390, "narrow")):
        tab = open_tab(server.base_url, viewport={"width": width, "height": 900})
        page = tab.page
        page.goto(f"/problems/{PROBLEM}")
        section = page.locator("section.attempts")
        show_code(page)
        # A fresh browser owns nothing.
        section.locator(".attempts-note", has_text="No submissions from you").wait_for()
        replace_code(page, attempt)
        page.get_by_role("button", name="Run examples").click()
        wait_report(page, "run")
        item = section.locator("li.attempt").first
        item.wait_for()
        assert item.get_attribute("data-verdict") == "compile_error"
        assert section.locator("li.attempt").count() == 1
        replace_code(page, "x = 1\n")
        wait_draft(page, "x = 1\n")  # the draft is saved 300 ms after an edit: not yet the attempt
        item.get_by_role("button", name="Restore").click()
        page.get_by_role("dialog").get_by_role("button", name="Restore").click()
        page.locator(".draft-note", has_text="Attempt restored").wait_for()
        wait_draft(page, attempt)
        assert editor_text(page) == attempt.rstrip("\n") or editor_text(page) == attempt
        tab.shot(f"12-my-attempts-{label}", at="section.attempts")
        tab.axe_both_themes(f"my-attempts-{label}")
        # The submissions list filters to this browser's own.
        page.goto("/submissions?mine=true")
        rows = page.locator("table.submissions tbody tr")
        rows.first.wait_for()
        assert rows.count() == 1
        assert page.locator("#filter-mine").is_checked()


def test_compare_an_attempt_with_the_draft(server: Server, open_tab: Callable[..., Tab]) -> None:
    """Compare opens a diff of an attempt (left, read-only) against the draft (right): the
    changed line marked on both sides, the unchanged runs collapsed until asked, keyboard
    reachable, closed by Escape; at 390 px the unified view. Restore works from the diff."""
    lines = SOLUTION.split("\n")
    changed = 6  # 0-based: `return x + h @ params["w2"] + params["b2"]`
    assert lines[changed].endswith('params["b2"]')
    first = "\n".join([*lines[:5], lines[5].rstrip(")"), *lines[6:]])  # compile errors:
    second = "\n".join([*lines[:changed], lines[changed][:-1], *lines[changed + 1:]])  # fast
    for width, label in ((1280, "wide"), (390, "narrow")):
        tab = open_tab(server.base_url, viewport={"width": width, "height": 900})
        page = tab.page
        page.goto(f"/problems/{PROBLEM}")
        section = page.locator("section.attempts")
        for code, button, mode in ((first, "Run examples", "run"), (second, "Submit", "submit")):
            replace_code(page, code)
            page.get_by_role("button", name=button).click()
            wait_report(page, mode)
        section.locator("li.attempt").nth(1).wait_for()
        replace_code(page, SOLUTION)
        compare = section.locator("li.attempt").first.get_by_role("button", name="Compare")
        compare.click()
        dialog = page.get_by_role("dialog", name="Compare this attempt with your draft")
        dialog.wait_for()
        assert dialog.get_attribute("data-layout") == ("split" if width >= 768 else "unified")
        summary = f"Differs in 1 place: attempt line {changed + 1} → draft line {changed + 1}."
        assert dialog.locator(".diff-summary").inner_text() == summary
        if width >= 768:
            old = dialog.locator(".cm-merge-a .cm-changedLine")
            new = dialog.locator(".cm-merge-b .cm-changedLine")
        else:  # the attempt's line shown inline, above the draft's
            old = dialog.locator(".cm-deletedChunk .cm-deletedLine")
            new = dialog.locator(".cm-content > .cm-changedLine")
        assert old.all_inner_texts() == [lines[changed][:-1]]
        assert new.all_inner_texts() == [lines[changed]]
        # Unchanged runs are collapsed (the imports, and everything after remat_block's line).
        collapsed = dialog.locator(".cm-collapsedLines")
        assert collapsed.count() >= 2 and "unchanged lines" in collapsed.first.inner_text()
        assert "def solve" not in dialog.locator(".diff-body").inner_text()
        if width < 768:
            box = dialog.bounding_box()
            assert box is not None and box["width"] <= width
            assert page.evaluate("document.documentElement.scrollWidth") <= width
        tab.shot(f"18-compare-{label}", at=".diff-dialog .diff-summary")
        tab.axe_both_themes(f"compare-{label}")
        # Keyboard: focus starts on Close; the read-only draft is three Shift+Tabs away.
        assert page.evaluate("document.activeElement.textContent") == "Close"
        for _ in range(3):
            page.keyboard.press("Shift+Tab")
        focused = page.evaluate("document.activeElement.getAttribute('aria-label')")
        assert focused.startswith("Your draft")
        page.keyboard.type("typed")  # read-only: nothing changes
        assert "typed" not in dialog.locator(".diff-body").inner_text()
        before = collapsed.count()
        collapsed.first.click()  # one run unfolds (on both sides of the split view)
        assert collapsed.count() == (before - 2 if width >= 768 else before - 1)
        dialog.get_by_role("button", name="Show all lines").click()
        assert dialog.locator(".cm-collapsedLines").count() == 0
        if width >= 768:  # a window made narrow while open switches to the unified view
            page.set_viewport_size({"width": 600, "height": 900})
            page.locator(".diff-dialog[data-layout='unified']").wait_for()
            assert dialog.locator(".cm-deletedChunk").count() == 1
            page.set_viewport_size({"width": width, "height": 900})
            page.locator(".diff-dialog[data-layout='split']").wait_for()
        assert "def solve" in dialog.locator(".diff-body").inner_text()
        page.keyboard.press("Escape")
        dialog.wait_for(state="detached")
        assert page.evaluate("document.activeElement.textContent") == "Compare"
        assert editor_text(page) == SOLUTION
        # Restore from the diff (after the usual confirmation).
        compare.click()
        dialog.get_by_role("button", name="Restore this attempt").click()
        confirm = page.get_by_role("dialog", name="Restore this attempt?")
        confirm.get_by_role("button", name="Restore").click()
        page.locator(".draft-note", has_text="Attempt restored").wait_for()
        assert draft(page) == second


# -- small screens and narrow panes (#23 item 5) ----------------------------------------------
def test_small_screens_and_the_wide_layout(server: Server, open_tab: Callable[..., Tab]) -> None:
    """390 px: Statement / Code tabs, test rows that wrap (no sideways scroll). 1280 px: the Got
    column is never clipped. Both: the examples once, the elapsed counter stops at the verdict."""
    wrong = (SUBMISSIONS / "wrong_forgets_b2.py").read_text()
    for width, label in ((390, "narrow"), (1280, "wide")):
        tab = open_tab(server.base_url, viewport={"width": width, "height": 900})
        page = tab.page
        page.goto(f"/problems/{PROBLEM}")
        page.locator(".statement").wait_for()
        # The statement has its own "Examples" section: the exact values go there, once.
        assert page.locator("section.examples").count() == 0
        assert page.locator(".statement .examples.in-statement details.example").count() == 3
        tabs = page.get_by_role("tab")
        assert tabs.first.is_visible() == (width < 1024)
        replace_code(page, wrong)
        page.get_by_role("button", name="Run examples").click()
        report = wait_report(page, "run")
        assert report.get_attribute("data-verdict") == "wrong_answer"
        elapsed = page.locator(".elapsed").inner_text()
        page.wait_for_timeout(2500)
        assert page.locator(".elapsed").inner_text() == elapsed  # stopped at the verdict
        if width < 1024:
            width_now = page.evaluate("document.documentElement.scrollWidth")
            assert width_now <= width, f"the page is {width_now} px wide"
            row = report.locator(f"{TEST_TABLE} tbody tr").first
            box = row.bounding_box()
            assert box is not None and box["width"] <= width
            # Each cell on its own line, labelled (a ::before, so not in inner_text).
            cell = row.locator("td.message-cell")
            assert cell.evaluate("e => getComputedStyle(e).display") == "block"
            assert cell.evaluate("e => getComputedStyle(e, '::before').content") == '"Message: "'

        else:
            # Every table fits its box: the Got and Message columns are never cut off.
            cut = page.evaluate(
                """() => [...document.querySelectorAll('table.compare, table.tests')].filter(
                    t => t.parentElement.scrollWidth > t.parentElement.clientWidth + 1).map(
                    t => `${t.className}: ${t.parentElement.scrollWidth} > `
                         + `${t.parentElement.clientWidth}`)""")
            assert not cut, cut
        tab.shot(f"16-{label}-wrong-answer", at=f"#result .report {TEST_TABLE}")
        tab.axe_both_themes(f"small-screens-{label}")


# -- run on my own input (#23 item 4) -------------------------------------------------------------
def test_run_on_my_own_input(server: Server, open_tab: Callable[..., Tab]) -> None:
    tab = open_tab(server.base_url)
    page = tab.page
    tab.allowed_console.append(re.compile(r"status of 422"))  # the refused input below
    page.goto(f"/problems/{PROBLEM}")
    replace_code(page, SOLUTION)
    page.locator("details.own-input summary").click()
    box = page.get_by_label("Inputs (JSON: an object of the arguments)")
    example = json.loads(box.input_value())
    assert set(example) == {"params", "x", "y"}  # the first published example's inputs
    box.fill("{not json")
    page.get_by_role("button", name="Run on this input").click()
    assert "Not valid JSON" in page.locator(".own-error").inner_text()
    # Outside the constraints (B = 5 > 4): refused by the server, nothing graded.
    box.fill(json.dumps({**example, "x": [[1.0, 2.0]] * 5, "y": [[0.0, 0.0]] * 5}))
    page.get_by_role("button", name="Run on this input").click()
    page.locator("#grade-status[data-state='error']").wait_for()
    assert "B = 5 is outside the constraints" in page.locator("#grade-status").inner_text()
    mine = {**example, "x": [[0.25, -1.5], [2.0, 0.5]], "y": [[1.0, 0.0], [0.0, 1.0]]}
    box.fill(json.dumps(mine))
    page.get_by_role("button", name="Run on this input").click()
    report = wait_report(page, "run")
    row = report.locator(f"{TEST_TABLE} tbody tr[data-test='custom-1']")
    assert row.get_attribute("data-verdict") == "accepted"
    assert "your input" in row.inner_text()
    # Per-test time: a Time column, filled for every test that ran.
    assert "Time" in report.locator(f"{TEST_TABLE} thead").inner_text()
    times = report.locator(f"{TEST_TABLE} tbody td[data-label='Time']").all_inner_texts()
    assert times and all(re.fullmatch(r"\d+(\.\d+)? (ms|s)", t) for t in times), times
    details = report.locator("details.test-details[data-test='custom-1']")
    assert "within the tolerance" in (details.locator(".compare-summary").text_content() or "")
    tab.shot("17-own-input", at="details.test-details[data-test='custom-1']")
    tab.axe_both_themes("own-input")
