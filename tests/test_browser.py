"""The course in a real browser (headless Chromium): `make test-browser` runs this file.

1. JupyterLab as `make lab` starts it (tools/lab/jupyter_lab_config.py): lecture 07 opens from its .py
   as a notebook with the python3 kernel and no dialog or news pop-up, every cell runs without an error,
   a chart stands under the sliders before any move, moving a slider redraws it, and saving with Ctrl+S
   leaves the script byte for byte as it was and `git status notebooks/` as it was.
2. Lecture 07's reveal.js deck, built as `make slides` builds it, opened from file:// with the network
   blocked: reveal.js and MathJax start, no request leaves file://, nothing fails to load, and the speaker
   notes are hidden from the audience (they exist, and they show in the speaker view).
3. Every control of the lectures with widgets (03's stepper, 04's tile walk, 07's lab) moved once in
   JupyterLab: its chart changes in the page, and each redraw took under 1 s of CPU in the kernel
   (`course.live.REDRAWS`; the wall time in the page is printed beside it).
4. Every deck of `make slides` (the make target builds them first) at 1280×800 with the network blocked:
   no slide's content overflows the slide or scrolls, no request leaves file://, nothing fails to load.

Needs Debian's chromium and chromium-driver (the make target installs them) and selenium (dev extra).
Without FLASHIO_BROWSER=1 (set by `make test-browser`) the file is skipped, so `make test` stays CPU-light.
"""

import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(
    os.environ.get("FLASHIO_BROWSER") != "1", reason="real-browser test: run `make test-browser`"
)

ROOT = Path(__file__).resolve().parents[1]
LECTURE = ROOT / "notebooks" / "07_interactive.py"
LAB_CONFIG = ROOT / "tools" / "lab" / "jupyter_lab_config.py"
CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"
WAIT_S = 90


def _browser(extra_args=(), page_load_strategy="normal", window=(1400, 1000)):
    """Headless Chromium driven by Debian's chromedriver; no Selenium Manager, nothing downloaded.
    `window` is the viewport in CSS pixels (set through the DevTools protocol, so it is exact)."""
    webdriver = pytest.importorskip("selenium.webdriver")
    for path in (CHROMIUM, CHROMEDRIVER):
        assert Path(path).exists(), (
            f"{path} missing: `make test-browser` installs chromium and chromium-driver"
        )
    os.environ["SE_OFFLINE"] = "true"
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    options.page_load_strategy = page_load_strategy
    for arg in (
        "--headless=new",
        "--no-sandbox",
        "--disable-dev-shm-usage",
        f"--window-size={window[0]},{window[1]}",
    ):
        options.add_argument(arg)
    for arg in extra_args:
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"performance": "ALL", "browser": "ALL"})
    driver = webdriver.Chrome(options=options, service=webdriver.ChromeService(executable_path=CHROMEDRIVER))
    driver.set_script_timeout(WAIT_S)
    driver.execute_cdp_cmd(
        "Emulation.setDeviceMetricsOverride",
        {"width": window[0], "height": window[1], "deviceScaleFactor": 1, "mobile": False},
    )
    return driver


def _wait(driver, what, script, timeout=WAIT_S, *args):
    """Poll a JavaScript expression until it returns something truthy; fail saying what was awaited."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = driver.execute_script(script, *args)
        if value:
            return value
        time.sleep(0.25)
    pytest.fail(f"timed out after {timeout} s waiting for {what}")


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _git_status():
    return subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=all", "notebooks/"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout


@pytest.fixture
def jupyterlab(tmp_path):
    """JupyterLab with `make lab`'s configuration on a free port with a random token; stopped afterwards."""
    port, token = _free_port(), secrets.token_hex(16)
    env = dict(
        os.environ,
        JUPYTERLAB_SETTINGS_DIR=str(tmp_path / "user-settings"),  # the user's own settings stay out
        JUPYTERLAB_WORKSPACES_DIR=str(tmp_path / "workspaces"),
        JUPYTER_RUNTIME_DIR=str(tmp_path / "runtime"),
    )
    command = [
        str(Path(sys.executable).with_name("jupyter")),
        "lab",
        "--config",
        str(LAB_CONFIG),
        "--ServerApp.root_dir=" + str(ROOT / "notebooks"),
        "--no-browser",
        "--ip=127.0.0.1",
        f"--port={port}",
        "--ServerApp.port_retries=0",
        f"--IdentityProvider.token={token}",
        "--LabApp.expose_app_in_browser=True",  # lets the test run JupyterLab's own commands
        *(["--allow-root"] if os.geteuid() == 0 else []),
    ]
    log = tmp_path / "jupyterlab.log"
    with log.open("w") as out:
        server = subprocess.Popen(
            command, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + WAIT_S
        while True:
            try:
                with urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=2):
                    break
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"JupyterLab did not start; its log ends:\n{log.read_text()[-2000:]}")
                time.sleep(0.5)
        yield base, token
    finally:
        server.send_signal(signal.SIGINT)
        server.send_signal(signal.SIGINT)  # the second one skips the "shut down? (y/n)" prompt
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait()


NOTEBOOK = "const w = window.jupyterapp && window.jupyterapp.shell.currentWidget;"

RUN_ALL = """
const done = arguments[arguments.length - 1];
window.jupyterapp.commands.execute('notebook:run-all-cells').then(
  ok => done({ok: ok}), err => done({ok: false, error: String(err)}));
"""

ERROR_OUTPUTS = (
    NOTEBOOK
    + """
const errors = [];
const cells = w.content.model.cells;
for (let i = 0; i < cells.length; i++) {
  const cell = cells.get(i);
  if (cell.type !== 'code') continue;
  for (const o of cell.outputs.toJSON()) {
    if (o.output_type === 'error') errors.push(`cell ${i + 1}: ${o.ename}: ${o.evalue}`);
  }
  if (cell.executionCount === null) errors.push(`cell ${i + 1} did not run`);
}
for (const node of document.querySelectorAll('.jp-Notebook .jp-OutputArea-output')) {
  if (node.innerText.includes('Traceback (most recent call last)')) errors.push('a traceback: ' + node.innerText.slice(0, 300));
}
return errors;
"""
)

SLIDER = """
const sliders = [...document.querySelectorAll('.jp-Notebook .widget-slider')];
const named = sliders.find(s => (s.querySelector('.widget-label') || {}).innerText === arguments[0]);
return named || sliders[0] || null;
"""

CHART_UNDER = """
function chartUnder(slider) {
  const cell = slider.closest('.jp-Cell');
  const img = cell && cell.querySelector('.jp-OutputArea-output img.widget-image, .jupyter-widgets-output-area img, .widget-output img');
  return img ? img.src : null;
}
"""


DIALOGS = "return [...document.querySelectorAll('.jp-Dialog')].map(d => d.innerText);"


def _open(driver, base, token, script):
    """Open a lecture from the file browser's URL; it must be a notebook on an idle python3 kernel."""
    driver.get(f"{base}/lab/tree/{script.name}?token={token}")
    _wait(
        driver,
        f"{script.name} to open as a notebook",
        NOTEBOOK
        + f"return w && w.node.classList.contains('jp-NotebookPanel') && w.context.path === '{script.name}';",
    )
    kernel = _wait(
        driver,
        f"{script.name}'s kernel to start and be idle",
        NOTEBOOK + "const k = w.sessionContext.session && w.sessionContext.session.kernel;"
        "return k && k.status === 'idle' && k.name;",
    )
    assert kernel == "python3", f"{script.name} started kernel {kernel!r}, not python3"
    dialogs = driver.execute_script(DIALOGS)
    assert not dialogs, f"a dialog opened with {script.name} (kernel picker?): {dialogs}"


def _run_all(driver, script):
    started = time.monotonic()
    result = driver.execute_async_script(RUN_ALL)
    errors = driver.execute_script(ERROR_OUTPUTS)
    assert not errors and result.get("ok"), f"running all cells of {script.name}: {errors or result}"
    print(f"{script.name}: all cells ran in {time.monotonic() - started:.1f} s")


def _save(driver, script):
    """Ctrl+S, as a student saves; wait until the file on disk was written."""
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.keys import Keys

    mtime = script.stat().st_mtime_ns
    driver.execute_script(NOTEBOOK + "w.content.activate(); w.content.node.focus();")
    ActionChains(driver).key_down(Keys.CONTROL).send_keys("s").key_up(Keys.CONTROL).perform()
    deadline = time.monotonic() + 30
    while script.stat().st_mtime_ns == mtime:
        dialogs = driver.execute_script(DIALOGS)
        assert not dialogs, f"saving {script.name} opened a dialog: {dialogs}"
        assert time.monotonic() < deadline, f"Ctrl+S did not save {script.name} within 30 s"
        time.sleep(0.25)
    # The save rewrote the script (its bytes are checked by `_unchanged`); give it back its modification
    # time, so the build's freshness checks (a deck older than its script) see no edit that did not happen.
    os.utime(script, ns=(script.stat().st_atime_ns, mtime))


def _unchanged(script, text, status):
    assert script.read_bytes() == text, (
        f"saving from JupyterLab changed notebooks/{script.name} (see `git diff`): check jupytext.toml"
    )
    assert _git_status() == status, f"git status notebooks/ changed:\n{_git_status()}"


def test_lecture_07_runs_redraws_and_saves_unchanged_in_jupyterlab(jupyterlab):
    from selenium.webdriver.common.keys import Keys

    base, token = jupyterlab
    text, status = LECTURE.read_bytes(), _git_status()
    driver = _browser()
    try:
        _open(driver, base, token, LECTURE)
        toasts = driver.execute_script(
            "return [...document.querySelectorAll('.Toastify__toast')].map(t => t.innerText);"
        )
        assert not toasts, f"a notification pop-up on first start: {toasts}"
        listed = _wait(
            driver,
            "the file browser's listing",
            "return [...document.querySelectorAll('.jp-DirListing-item .jp-DirListing-itemText')].map(e => e.innerText);",
        )
        lectures = sorted(p.name for p in LECTURE.parent.glob("*.py"))
        assert sorted(listed) == lectures, (
            f"the file browser lists {sorted(listed)}, not one entry per lecture"
        )
        _run_all(driver, LECTURE)

        slider = _wait(driver, "a slider under the charts", SLIDER, WAIT_S, "sequence length N")
        driver.execute_script("arguments[0].scrollIntoView({block: 'center'});", slider)
        before = _wait(
            driver,
            "a chart under the sliders before the first move",
            CHART_UNDER + "return chartUnder(arguments[0]);",
            30,
            slider,
        )
        readout = slider.find_element("css selector", ".widget-readout")
        value_before = readout.text
        handle = slider.find_element("css selector", ".noUi-handle")
        driver.execute_script("arguments[0].focus();", handle)
        handle.send_keys(Keys.ARROW_RIGHT)
        _wait(
            driver,
            "the slider's value to change",
            "return arguments[0].innerText !== arguments[1];",
            10,
            readout,
            value_before,
        )
        _wait(
            driver,
            f"the chart to redraw after moving the slider from {value_before} to {readout.text}",
            CHART_UNDER + "const now = chartUnder(arguments[0]); return now && now !== arguments[1];",
            60,
            slider,
            before,
        )
        errors = driver.execute_script(ERROR_OUTPUTS)
        assert not errors, f"after moving the slider: {errors}"
        urls, _ = _requests(driver)
        outside = [u for u in urls if not u.startswith((base, "data:", "blob:"))]
        assert not outside, f"the JupyterLab page fetched from outside the machine: {outside[:5]}"
        _save(driver, LECTURE)
    finally:
        driver.quit()
    _unchanged(LECTURE, text, status)


@pytest.mark.skipif(
    os.environ.get("FLASHIO_BROWSER_ALL") != "1", reason="every lecture: FLASHIO_BROWSER_ALL=1"
)
@pytest.mark.parametrize("script", sorted((ROOT / "notebooks").glob("[0-9]*.py")), ids=lambda p: p.stem)
def test_every_lecture_runs_and_saves_unchanged_in_jupyterlab(jupyterlab, script):
    """The issue's "run every lecture in JupyterLab, then git status is clean" (minutes: not in CI)."""
    base, token = jupyterlab
    text, status = script.read_bytes(), _git_status()
    driver = _browser()
    try:
        _open(driver, base, token, script)
        _run_all(driver, script)
        _save(driver, script)
    finally:
        driver.quit()
    _unchanged(script, text, status)


def _requests(driver):
    """(requested URLs, failed loads) from Chromium's performance log since the last call."""
    urls, failed = [], []
    for entry in driver.get_log("performance"):
        message = json.loads(entry["message"])["message"]
        if message["method"] == "Network.requestWillBeSent":
            urls.append(message["params"]["request"]["url"][:120])
        elif message["method"] == "Network.loadingFailed":
            failure = {k: message["params"].get(k) for k in ("errorText", "blockedReason", "type")}
            if failure["errorText"] == "net::ERR_ABORTED" and failure["type"] == "Document":
                continue  # a navigation the page cancelled itself (reveal.js moving on), not a failed load
            failed.append(failure)
    return urls, failed


def test_slide_deck_works_offline_with_notes_only_in_the_speaker_view(tmp_path):
    executed = tmp_path / "executed" / f"{LECTURE.stem}.ipynb"
    for step, inputs, out in (
        ("execute", LECTURE, executed.parent),
        ("slides", executed, tmp_path / "slides"),
    ):
        build = [sys.executable, "-m", "tools.build_course", step, str(inputs), "--out", str(out)]
        done = subprocess.run(build, cwd=ROOT, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, f"building 07's deck ({step}) failed:\n{done.stdout}{done.stderr}"
    deck = tmp_path / "slides" / f"{LECTURE.stem}.slides.html"
    blocked = ("--host-resolver-rules=MAP * ~NOTFOUND", "--proxy-server=http://127.0.0.1:9")
    driver = _browser(blocked, page_load_strategy="none")  # the speaker view is written, never "loaded"
    try:
        driver.get(deck.as_uri())
        _wait(
            driver,
            "reveal.js to start",
            "return document.querySelector('.reveal.ready');",
        )
        _wait(driver, "MathJax to start", "return window.MathJax && MathJax.isReady;", 30)
        urls, failed = _requests(driver)
        outside = [u for u in urls if not u.startswith(("file://", "data:"))]
        assert not outside, f"the deck requested {len(outside)} URL(s) outside file://: {outside[:5]}"
        assert not failed, f"{len(failed)} load(s) failed, e.g. {failed[:3]}"
        notes = driver.execute_script(
            "return [...document.querySelectorAll('aside.notes')].map(a => "
            "[getComputedStyle(a).display, a.textContent.trim().slice(0, 60)]);"
        )
        assert notes, "lecture 07's deck has no speaker notes (cells with slide_type 'notes')"
        shown = [text for display, text in notes if display != "none"]
        assert not shown, f"speaker notes visible to the audience: {shown}"
        audience = driver.execute_script("return document.body.innerText;")
        leaked = [text for _, text in notes if text and text in audience]
        assert not leaked, f"speaker notes in the audience page's text: {leaked}"
        assert "Speaker notes:" not in audience

        driver.execute_script(
            # reveal.js is an AMD module here (loaded by require.js), not a global: go by the URL hash
            "const s = document.querySelector('aside.notes').closest('section');"
            "const top = s.parentElement.classList.contains('slides') ? s : s.parentElement;"
            "const h = [...top.parentElement.children].indexOf(top);"
            "const v = top === s ? 0 : [...top.children].filter(c => c.tagName === 'SECTION').indexOf(s);"
            "location.hash = '#/' + h + '/' + v;"
        )
        deck_window = driver.current_window_handle
        driver.find_element("css selector", "body").send_keys("s")
        deadline = time.monotonic() + 20
        while len(driver.window_handles) < 2:
            assert time.monotonic() < deadline, "pressing S opened no speaker view"
            time.sleep(0.25)
        driver.switch_to.window(next(h for h in driver.window_handles if h != deck_window))
        speaker = _wait(
            driver,
            "the speaker view to show the notes",
            "const v = document.querySelector('.speaker-controls-notes .value'); return v && v.innerText.trim();",
            30,
        )
        assert notes[0][1][:30] in speaker, f"the speaker view shows {speaker[:80]!r}, not the slide's notes"
        urls, failed = _requests(driver)
        outside = [u for u in urls if not u.startswith(("file://", "data:", "about:"))]
        assert not outside and not failed, f"speaker view: outside {outside[:5]}, failed {failed[:3]}"
    finally:
        driver.quit()
    shutil.rmtree(tmp_path / "executed", ignore_errors=True)


# ---------------------------------------------------------------------------------------------
# every deck on a 1280×800 projector
# ---------------------------------------------------------------------------------------------

PROJECTOR = (1280, 800)
OFFLINE = ("--host-resolver-rules=MAP * ~NOTFOUND", "--proxy-server=http://127.0.0.1:9")

LEAF_SLIDES = """
const out = [];
[...document.querySelectorAll('.reveal .slides > section')].forEach((top, h) => {
  const kids = [...top.children].filter(c => c.tagName === 'SECTION');
  if (kids.length) kids.forEach((k, v) => out.push([h, v])); else out.push([h, 0]);
});
return out;
"""

LEAF = """
const top = document.querySelectorAll('.reveal .slides > section')[arguments[0]];
const kids = [...top.children].filter(c => c.tagName === 'SECTION');
return kids.length ? kids[arguments[1]] : top;
"""

#: MathJax 2 typesets in a queue: a callback pushed on it runs once everything before it is done.
MATHJAX_IDLE = """
const done = arguments[arguments.length - 1];
if (!(window.MathJax && MathJax.Hub)) { done(false); return; }
MathJax.Hub.Queue(() => done(true));
"""

#: What of the present slide does not fit the slide (reveal.js's logical size, scaled to the window)
#: or needs a scroll bar: the slide's own box, and every element inside it that scrolls.
OVERFLOW = """
const s = arguments[0];
const slides = document.querySelector('.reveal .slides');
const W = parseFloat(slides.style.width), H = parseFloat(slides.style.height);
const problems = [];
if (s.scrollHeight > H + 1) problems.push(`content ${s.scrollHeight} px high, the slide ${H} px`);
if (s.scrollWidth > W + 1) problems.push(`content ${s.scrollWidth} px wide, the slide ${W} px`);
for (const el of s.querySelectorAll('*')) {
  if (el.closest('aside.notes')) continue;
  const cs = getComputedStyle(el);
  const name = el.tagName.toLowerCase() + (el.className && typeof el.className === 'string' ? '.' + el.className.split(' ')[0] : '');
  if (/(auto|scroll)/.test(cs.overflowY) && el.scrollHeight > el.clientHeight + 1)
    problems.push(`${name} scrolls vertically (${el.scrollHeight} > ${el.clientHeight} px)`);
  if (/(auto|scroll)/.test(cs.overflowX) && el.scrollWidth > el.clientWidth + 1)
    problems.push(`${name} scrolls horizontally (${el.scrollWidth} > ${el.clientWidth} px)`);
}
const heading = s.querySelector('h1, h2, h3, h4');
const scale = s.getBoundingClientRect().width / s.offsetWidth;
return {problems: problems, title: heading ? heading.innerText.trim() : s.innerText.trim().slice(0, 60),
        scale: scale, size: [W, H]};
"""


def _show_slide(driver, h, v):
    """Go to slide (h, v) by its URL hash, as a reader's link does; wait until it is the present slide,
    its images are decoded and MathJax has typeset it."""
    driver.execute_script(f"location.hash = '#/{h}/{v}';")
    leaf = _wait(
        driver,
        f"slide {h}/{v} to be shown",
        "const s = (() => {" + LEAF + "})(); return s.classList.contains('present') && s;",
        20,
        h,
        v,
    )
    _wait(
        driver,
        f"slide {h}/{v}'s images to load",
        "return [...arguments[0].querySelectorAll('img')].every(i => i.complete);",
        20,
        leaf,
    )
    driver.execute_async_script(MATHJAX_IDLE)
    return leaf


def _deck_overflows(driver, deck):
    """One entry per slide of `deck` (leaf sections, in order): where, its title and what overflows."""
    driver.get(deck.resolve().as_uri())
    _wait(driver, f"reveal.js to start {deck.name}", "return document.querySelector('.reveal.ready');")
    _wait(driver, "MathJax to start", "return window.MathJax && MathJax.isReady;", 30)
    driver.execute_script("document.querySelector('.reveal').classList.add('no-transition');")
    slides = []
    for h, v in driver.execute_script(LEAF_SLIDES):
        leaf = _show_slide(driver, h, v)
        measured = driver.execute_script(OVERFLOW, leaf)
        slides.append({"where": f"{h}/{v}", **measured})
    return slides


DECKS = ROOT / "build" / "slides"
LECTURES = sorted((ROOT / "notebooks").glob("[0-9]*.py"))


@pytest.mark.parametrize("script", LECTURES, ids=lambda p: p.stem)
def test_every_slide_of_every_deck_fits_a_projector_offline(script):
    """Every deck `make slides` built (the make target builds them first), opened from file:// at 1280×800
    with the network blocked: no slide's content is taller or wider than the slide, nothing on it scrolls,
    no request leaves file:// and nothing fails to load."""
    deck = DECKS / f"{script.stem}.slides.html"
    assert deck.exists(), f"{deck.relative_to(ROOT)} missing: `make test-browser` builds it (`make slides`)"
    assert deck.stat().st_mtime >= script.stat().st_mtime, (
        f"{deck.name} is older than {script.name}: `make slides`"
    )
    driver = _browser(OFFLINE, page_load_strategy="none", window=PROJECTOR)
    try:
        slides = _deck_overflows(driver, deck)
        urls, failed = _requests(driver)
    finally:
        driver.quit()
    assert len(slides) >= 5, f"{deck.name}: only {len(slides)} slides found"
    width, height = slides[0]["size"]
    assert width / height == pytest.approx(PROJECTOR[0] / PROJECTOR[1], rel=0.05), (
        f"slide size {width}×{height}"
    )
    bad = [
        f"  slide {s['where']} ({s['title'][:50]!r}): {'; '.join(s['problems'])}"
        for s in slides
        if s["problems"]
    ]
    assert not bad, (
        f"{deck.name}: {len(bad)} of {len(slides)} slides overflow a 1280×800 projector:\n" + "\n".join(bad)
    )
    outside = [u for u in urls if not u.startswith(("file://", "data:"))]
    assert not outside, f"{deck.name} requested {len(outside)} URL(s) outside file://: {outside[:5]}"
    assert not failed, f"{deck.name}: {len(failed)} load(s) failed, e.g. {failed[:3]}"


#: The lectures with controls that redraw a chart: lecture 3's online-softmax stepper, lecture 4's tile walk
#: (a schedule drop-down over a step slider) and lecture 7's lab (six controls).
WIDGET_LECTURES = ("03_tiling_online_softmax", "04_io_complexity", "07_interactive")
REDRAW_S = 1.0  # the bound, on the kernel's CPU time per redraw (course.live.REDRAWS)
PAGE_S = 5.0  # a sanity bound on the page's wall time: generous, since a shared 2-core machine adds load

#: Every control in the notebook's widget outputs: [kind, index among that kind].
CONTROLS = """
const out = [];
document.querySelectorAll('.jp-Notebook .widget-slider .noUi-handle').forEach((_, i) => out.push(['slider', i]));
document.querySelectorAll('.jp-Notebook .widget-dropdown select').forEach((_, i) => out.push(['dropdown', i]));
return out;
"""

#: The control, and the image sources of the cell output holding it (the chart it redraws).
CONTROL = """
const [kind, i] = [arguments[0], arguments[1]];
const el = kind === 'slider'
  ? document.querySelectorAll('.jp-Notebook .widget-slider .noUi-handle')[i]
  : document.querySelectorAll('.jp-Notebook .widget-dropdown select')[i];
const area = el.closest('.jp-OutputArea-output') || el.closest('.jp-Cell');
return [el, [...area.querySelectorAll('img')].map(img => img.src).join(' ')];
"""

#: Move a drop-down to its next option (the first after the last), as a click would, and say to what.
NEXT_OPTION = """
const s = arguments[0];
s.selectedIndex = (s.selectedIndex + 1) % s.options.length;
s.dispatchEvent(new Event('change', {bubbles: true}));
return s.options[s.selectedIndex].text;
"""

KERNEL_PRINT = (
    NOTEBOOK
    + """
const done = arguments[arguments.length - 1];
const future = w.sessionContext.session.kernel.requestExecute({code: arguments[0], store_history: false});
let text = '';
future.onIOPub = msg => { if (msg.header.msg_type === 'stream') text += msg.content.text; };
future.done.then(() => done(text), err => done('ERROR ' + err));
"""
)


@pytest.mark.parametrize("stem", WIDGET_LECTURES)
def test_every_control_redraws_its_chart_within_a_second(jupyterlab, stem):
    """Each control of the lecture moved once in JupyterLab: its chart changes in the page, and every
    redraw the kernel did for it (`course.live.REDRAWS`) took under a second of CPU. CPU seconds, not wall
    seconds, are the laptop's figure: on a shared machine the wall clock also counts other processes."""
    from selenium.webdriver.common.keys import Keys

    base, token = jupyterlab
    script = ROOT / "notebooks" / f"{stem}.py"
    driver = _browser()
    try:
        _open(driver, base, token, script)
        _run_all(driver, script)
        before = json.loads(
            driver.execute_async_script(
                KERNEL_PRINT, "import json, course.live as L; print(json.dumps(len(L.REDRAWS)))"
            )
        )
        controls = driver.execute_script(CONTROLS)
        assert controls, f"{script.name}: no slider or drop-down in its widget outputs"
        seen = []
        for kind, i in controls:
            control, images = driver.execute_script(CONTROL, kind, i)
            assert images, f"{script.name}: no chart beside {kind} {i}"
            driver.execute_script("arguments[0].scrollIntoView({block: 'center'});", control)
            started = time.monotonic()
            if kind == "slider":
                driver.execute_script("arguments[0].focus();", control)
                control.send_keys(Keys.ARROW_RIGHT)
                to = "one step right"
            else:
                to = driver.execute_script(NEXT_OPTION, control)
            _wait(
                driver,
                f"{script.name}: the chart beside {kind} {i} to redraw after moving it to {to}",
                "const area = arguments[0].closest('.jp-OutputArea-output') || arguments[0].closest('.jp-Cell');"
                "return [...area.querySelectorAll('img')].map(img => img.src).join(' ') !== arguments[1];",
                30,
                control,
                images,
            )
            seen.append((kind, i, to, time.monotonic() - started))
        errors = driver.execute_script(ERROR_OUTPUTS)
        assert not errors, f"after moving the controls of {script.name}: {errors}"
        redraws = json.loads(
            driver.execute_async_script(
                KERNEL_PRINT, "import json, course.live as L; print(json.dumps(L.REDRAWS))"
            )
        )[before:]
    finally:
        driver.quit()
    for kind, i, to, wall in seen:
        print(f"{stem}: {kind} {i} -> {to}: chart changed in the page after {wall:.2f} s (wall)")
    drawn = [r for r in redraws if not r["cached"]]
    for r in redraws:
        print(
            f"{stem}: {r['chart']} {r['setting']}: {r['cpu_s']:.3f} s CPU, {r['wall_s']:.3f} s wall, cached {r['cached']}"
        )
    assert len(redraws) >= len(seen), (
        f"{script.name}: {len(seen)} moves, only {len(redraws)} redraws recorded"
    )
    # The page's wall clock also counts the browser, the comm round trip and whatever else the machine
    # runs (0.6-1.2 s seen on a shared 2-core machine): a loose bound, against the 6.5-9.6 s of issue 24.
    late = [(kind, i, to, round(wall, 2)) for kind, i, to, wall in seen if wall >= PAGE_S]
    assert not late, f"{script.name}: move(s) that took {PAGE_S} s or more to show: {late}"
    slow = [r for r in drawn if r["cpu_s"] >= REDRAW_S]
    assert not slow, f"{script.name}: {len(slow)} redraw(s) took {REDRAW_S} s of CPU or more: {slow[:3]}"
