"""The built book, opened in a real browser with the network switched off.

These tests read `_build/html` (build it first: `make book`) and open pages in headless Chromium
with every host name unresolvable (`--host-resolver-rules=MAP * ~NOTFOUND`), so a page that still
needed a CDN would show it here as raw LaTeX, a blank widget or an empty bertviz view. From the
rendered DOM they check that

- math was typeset by MathJax 3 (`mjx-container` elements, no raw `\\(` / `$$` left in math spans);
- every bertviz view drew its SVG (a populated layer menu and attention boxes);
- every page with ipywidgets rendered them (widget DOM nodes);
- the copy buttons still work next to require.js (loading require.js too early breaks them);
- no built page loads a script or stylesheet from a CDN, and the "Open in Colab" and download
  buttons are on every chapter.

They also save a screenshot of every chapter (into $BERTLAB_SCREENSHOTS if set, else a pytest
temporary folder) for a person to look at.

Without Chromium or a built book the tests skip with a message saying how to get them; under CI
(CI=true) they fail instead, so a CI machine cannot pass them by accident.
"""

from __future__ import annotations

import functools
import html
import json
import os
import re
import shutil
import subprocess
import tempfile
from html.parser import HTMLParser
from pathlib import Path

import pytest
import yaml

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[1]
HTML = ROOT / "_build" / "html"
CDN = re.compile(r"cdn\.jsdelivr|cdnjs|unpkg\.com|ajax\.googleapis|code\.jquery\.com|mathjax\.org", re.I)
BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


def _need(condition: bool, message: str) -> None:
    if condition:
        return
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"{message} (CI=true: the browser tests must run in CI)")
    pytest.skip(message)


def browser() -> str:
    found = next((shutil.which(b) for b in BROWSERS if shutil.which(b)), None)
    _need(
        found is not None,
        "headless Chromium not found; install it (Debian/Ubuntu: "
        "`apt-get install chromium`) or run `make setup` as root",
    )
    return found


def built() -> Path:
    _need((HTML / "index.html").exists(), f"the book is not built ({HTML} is missing); run `make book`")
    return HTML


def chapter_pages() -> list[Path]:
    """The built page of every entry of _toc.yml (root first)."""
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    files = [toc["root"]]

    def walk(entries):
        for e in entries or []:
            if "file" in e:
                files.append(e["file"])
            for key in ("parts", "chapters", "sections"):
                walk(e.get(key))

    walk(toc.get("parts"))
    walk(toc.get("chapters"))
    return [built() / f"{f}.html" for f in files]


def _chromium(*args: str, timeout: int = 90) -> subprocess.CompletedProcess:
    with tempfile.TemporaryDirectory(prefix="bertlab-chromium-") as profile:
        cmd = [
            browser(),
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            "--hide-scrollbars",
            f"--user-data-dir={profile}",
            # no network at all: every host name fails to resolve
            "--host-resolver-rules=MAP * ~NOTFOUND",
            *args,
        ]
        return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)


WINDOW = (1280, 1000)  # a laptop browser window, in CSS pixels
_MEASURE = """<script>
window.addEventListener("load", () => setTimeout(() => {
  const wide = [];
  const blocks = "div.cell_input pre, div.cell_output pre, article div.highlight pre, div.cell_output";
  const scrollers = Array.from(document.querySelectorAll("div.cell_output *")).filter((el) =>
    ["auto", "scroll"].includes(getComputedStyle(el).overflowX));  // e.g. a drawn view's own box
  [...document.querySelectorAll(blocks), ...scrollers].forEach((pre) => {
    if (!pre.offsetParent || pre.clientWidth === 0) return;  // not shown (a collapsed hidden input)
    if (pre.scrollWidth > pre.clientWidth + 1) {
      const longest = pre.textContent.split("\\n").reduce((a, b) => (b.length > a.length ? b : a), "");
      wide.push(`${pre.scrollWidth - pre.clientWidth}px too wide: ${longest.trim().slice(0, 70)}`);
    }
  });
  const widths = Array.from(document.querySelectorAll("div.cell_input pre"), (p) => p.clientWidth)
    .filter((w) => w > 0);
  document.body.setAttribute("data-wide-code", JSON.stringify(wide));
  document.body.setAttribute("data-code-width", String(widths.length ? Math.min(...widths) : -1));
}, 500));
</script>"""


@functools.lru_cache(maxsize=None)
def rendered(page: Path) -> str:
    """The DOM of a page after its scripts ran (MathJax, require.js, widgets, bertviz) in a WINDOW-sized
    window, its body carrying `_MEASURE`'s measurements of the code cells: one Chromium run serves
    every check of a page. The page is copied beside itself (so its relative links still work) with
    the measuring script added."""
    probe = page.with_name(f".measure-{page.name}")
    probe.write_text(page.read_text(encoding="utf-8").replace("</body>", _MEASURE + "</body>"), encoding="utf-8")
    try:
        result = _chromium(
            "--virtual-time-budget=20000", f"--window-size={WINDOW[0]},{WINDOW[1]}", "--dump-dom", probe.as_uri()
        )
    finally:
        probe.unlink()
    assert result.returncode == 0 and "<html" in result.stdout, (
        f"chromium could not render {page}: rc={result.returncode}\n{result.stderr[-2000:]}"
    )
    return result.stdout


def pages_where(pattern: str) -> list[Path]:
    """Built chapter pages whose HTML source matches `pattern`."""
    return [p for p in chapter_pages() if p.exists() and re.search(pattern, p.read_text(encoding="utf-8"))]


# elements that have no end tag: they open no scope for the parsers below
VOID_TAGS = ("br", "img", "meta", "link", "input", "hr", "area", "base", "col", "embed", "source", "wbr")


class _MathText(HTMLParser):
    """Collects the text inside elements of class "math" (spans and divs MathJax should replace)."""

    def __init__(self):
        super().__init__()
        self.depth = 0  # > 0 while inside a math element
        self.stack: list[bool] = []
        self.texts: list[str] = []

    def handle_starttag(self, tag, attrs):
        if tag in VOID_TAGS:
            return
        cls = dict(attrs).get("class") or ""
        is_math = "math" in cls.split() and tag in ("span", "div")
        self.stack.append(is_math)
        if is_math:
            self.depth += 1
            self.texts.append("")

    def handle_endtag(self, tag):
        if tag in VOID_TAGS:
            return
        if self.stack and self.stack.pop():
            self.depth -= 1

    def handle_data(self, data):
        if self.depth > 0 and self.texts:
            self.texts[-1] += data


# ------------------------------------------------------------------------------------------------
# (a) math
# ------------------------------------------------------------------------------------------------
def test_math_is_typeset_offline():
    pages = pages_where(r'class="math[ "]')
    assert pages, "no built chapter has math; expected at least chapter 7's parameter formula"
    for page in pages:
        dom = rendered(page)
        n = dom.count("<mjx-container")
        assert n > 0, f"{page.name}: MathJax did not typeset anything (no mjx-container) offline"
        parser = _MathText()
        parser.feed(dom)
        raw = [t.strip()[:80] for t in parser.texts if re.search(r"\\\(|\\\[|\$\$", t)]
        assert not raw, f"{page.name}: math left untypeset: {raw[:3]}"


class _ProseText(HTMLParser):
    """The text of each paragraph, list item and table cell of a page, outside code, math and
    pre-formatted blocks: where Markdown that was not parsed (a raw pipe table, raw $...$) shows."""

    SKIP = ("pre", "code", "script", "style", "kbd", "samp")
    BLOCKS = ("p", "li", "td", "th", "dd", "dt")

    def __init__(self):
        super().__init__()
        self.stack: list[tuple[str, bool]] = []  # (tag, is a skipped subtree)
        self.blocks: list[str] = []
        self.open: list[int] = []  # indices into blocks of the open block elements

    def _skipping(self) -> bool:
        return any(skip for _, skip in self.stack)

    def handle_starttag(self, tag, attrs):
        if tag in VOID_TAGS:
            return
        cls = (dict(attrs).get("class") or "").split()
        self.stack.append((tag, tag in self.SKIP or "math" in cls or "highlight" in cls))
        if tag in self.BLOCKS and not self._skipping():
            self.blocks.append("")
            self.open.append(len(self.blocks) - 1)

    def handle_endtag(self, tag):
        if tag in VOID_TAGS:
            return
        while self.stack:  # tolerate unclosed tags: pop to the matching one
            t, _ = self.stack.pop()
            if t in self.BLOCKS and self.open and not self._skipping():
                self.open.pop()
            if t == tag:
                break

    def handle_data(self, data):
        if self.open and not self._skipping():
            self.blocks[self.open[-1]] += data


RAW_TABLE = re.compile(r"^\s*\|.*\|\s*$\n^\s*\|\s*:?[-—–]{1,}", re.M)  # a header row then |---
RAW_MATH = re.compile(r"(?<![\\$\w])\$(?=\S)[^$\n]{1,200}?(?<=\S)\$(?![\w$])")
TRACEBACK = re.compile(r'class="[^"]*\boutput\b[^"]*\btraceback\b|Traceback \(most recent call last\)')


def unrendered_markdown(page_html: str) -> list[str]:
    """Paragraphs of a built page that still hold Markdown syntax a reader would see as raw text:
    a pipe table (a row of cells over a |---| rule) or inline $...$ math. Tracebacks in outputs
    too. Each finding is the offending text, shortened."""
    parser = _ProseText()
    parser.feed(page_html)
    found = []
    for text in parser.blocks:
        if RAW_TABLE.search(text):
            found.append(f"raw pipe table: {text.strip()[:80]!r}")
        elif RAW_MATH.search(text):
            found.append(f"raw $...$ math: {RAW_MATH.search(text).group(0)[:80]!r}")
    found += [f"traceback in an output: {m.group(0)[:60]!r}" for m in TRACEBACK.finditer(page_html)]
    return found


def test_unrendered_markdown_is_detected():
    """The check below finds what a CommonMark render of a generated table or formula leaves, and
    passes what MyST makes of them (an HTML table, a math span)."""
    raw = "<p>| model | L / H / A |\n|---|---|\n| Base | 12 / 768 / 12 |</p><p>so $L = 12$ layers</p>"
    assert len(unrendered_markdown(raw)) == 2
    tb = '<div class="cell_output docutils container"><div class="output traceback highlight-ipythontb">'
    assert unrendered_markdown(tb)
    good = (
        '<table><tr><th>model</th></tr><tr><td>Base</td></tr></table><p>so <span class="math notranslate '
        'nohighlight">\\(L = 12\\)</span> layers, for $5 or $10 a month</p><pre>| a | b |\n|---|---|</pre>'
    )
    assert unrendered_markdown(good) == []


def test_generated_markdown_renders():
    """No built page shows a raw pipe table, raw $...$ math or a traceback (generated Markdown is
    parsed as MyST: `nb_render_markdown_format` in _config.yml)."""
    offenders = []
    for page in chapter_pages():
        if page.exists():
            offenders += [f"{page.name}: {f}" for f in unrendered_markdown(page.read_text(encoding="utf-8"))]
    assert not offenders, f"{len(offenders)} places where Markdown was not rendered:\n" + "\n".join(offenders[:30])


# ------------------------------------------------------------------------------------------------
# (b) bertviz
# ------------------------------------------------------------------------------------------------
def test_bertviz_draws_its_svg_offline():
    pages = pages_where(r'id="bertviz-[0-9a-f]+"')
    preferred = built() / "book" / "05_multi_head.html"
    assert pages, "no built chapter has a bertviz view (expected chapter 5, or chapter 7's head view)"
    if preferred.exists():
        assert preferred in pages, "chapter 5 is built but has no bertviz head view"
    for page in pages:
        dom = rendered(page)
        views = re.findall(r'<div id="bertviz-[0-9a-f]+".*?<div id="vis">(.*?)</div>', dom, re.S)
        assert views, f"{page.name}: bertviz container not found in the rendered page"
        for vis in views:
            assert "<svg" in vis and "<rect" in vis, (
                f"{page.name}: bertviz drew nothing (were d3/jQuery/require.js reachable offline?)"
            )
        layers = re.findall(r'<select id="layer">(.*?)</select>', dom, re.S)
        assert layers and all("<option" in s for s in layers), f"{page.name}: bertviz layer menu is empty"


# ------------------------------------------------------------------------------------------------
# (c) ipywidgets
# ------------------------------------------------------------------------------------------------
def test_widgets_render_offline():
    pages = pages_where(r"application/vnd\.jupyter\.widget-view\+json")
    assert pages, "no built chapter has an ipywidget (chapter 1 has one)"
    for page in pages:
        source = page.read_text(encoding="utf-8")
        views = source.count('type="application/vnd.jupyter.widget-view+json"')
        dom = rendered(page)
        roots = re.findall(r'<div class="[^"]*\bjupyter-widgets\b[^"]*\bwidget-[a-z]', dom)
        assert roots, f"{page.name}: no widget was rendered (is the ipywidgets manager served locally?)"
        assert len(roots) >= views, f"{page.name}: {views} widget views in the page, {len(roots)} rendered"
        assert "Error displaying widget" not in dom, f"{page.name}: a widget failed to render"


def test_copy_buttons_survive_require_js():
    for page in pages_where(r"bertlab-js/require\.js"):
        dom = rendered(page)
        assert "copybtn" in dom, f"{page.name}: the copy buttons are gone (require.js loaded before clipboard.js?)"


# ------------------------------------------------------------------------------------------------
# (d) no CDN, launch and download buttons
# ------------------------------------------------------------------------------------------------
def test_no_page_loads_from_a_cdn():
    offenders = []
    for page in built().rglob("*.html"):
        if "_static" in page.parts:
            continue
        html = page.read_text(encoding="utf-8", errors="replace")
        for m in re.finditer(r"<(script|link)\b[^>]*?\b(src|href)=[\"']([^\"']+)[\"']", html):
            tag, _, url = m.groups()
            if tag == "link" and "stylesheet" not in m.group(0) and "preload" not in m.group(0):
                continue
            if CDN.search(url) or re.match(r"(https?:)?//", url):
                offenders.append(f"{page.relative_to(built())}: <{tag}> {url}")
        for block in re.findall(r"require(?:js)?\.config\(\s*\{.*?\}\s*\)", html, re.S):
            for url in re.findall(r"[\"'](https?://[^\"']+)[\"']", block):
                offenders.append(f"{page.relative_to(built())}: require.js path {url}")
    assert not offenders, "pages load code from the network:\n" + "\n".join(offenders[:20])


def test_launch_and_download_buttons():
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    repo = config["repository"]["url"].rstrip("/").removeprefix("https://github.com/")
    branch = config["repository"].get("branch", "main")
    chapters = [p for p in chapter_pages() if (ROOT / p.relative_to(built())).with_suffix(".ipynb").exists()]
    assert chapters, "no notebook chapters built"
    for page in chapters:
        html = page.read_text(encoding="utf-8")
        nb = page.relative_to(built()).with_suffix(".ipynb").as_posix()
        colab = f"https://colab.research.google.com/github/{repo}/blob/{branch}/{nb}"
        assert colab in html, f"{page.name}: no 'Open in Colab' link to {colab}"
        assert f"_sources/{nb}" in html and "btn-download-source-button" in html, (
            f"{page.name}: no download button for the notebook"
        )
        assert (built() / "_sources" / nb).exists(), f"{page.name}: the downloadable notebook is missing"


# ------------------------------------------------------------------------------------------------
# (e) code fits the page
# ------------------------------------------------------------------------------------------------


def code_overflow(page: Path) -> tuple[list[str], int]:
    """The code cells of a built page whose source or printed output scrolls sideways in a
    1280-pixel window (how far, and their longest line), and the width of the narrowest code cell
    in pixels (-1: none), as `rendered`'s measuring script found them."""
    dom = rendered(page)
    wide = re.search(r'data-wide-code="([^"]*)"', dom)
    width = re.search(r'data-code-width="(-?\d+)"', dom)
    assert wide and width, f"{page.name}: the measuring script did not run"
    return json.loads(html.unescape(wide.group(1))), int(width.group(1))


def test_code_fits_the_page_at_1280_px():
    """Code, printed output and drawn output (bertviz's views among them) of every page with code:
    the chapters, and the pages of prose with code blocks (the instructor's page)."""
    pages = [
        p
        for p in chapter_pages()
        if p.exists() and any(k in p.read_text(encoding="utf-8") for k in ('class="cell_input', 'class="highlight'))
    ]
    assert pages, "no built chapter has code cells"
    offenders, widths = [], []
    for page in pages:
        wide, width = code_overflow(page)
        offenders += [f"{page.name}: {w}" for w in wide]
        widths.append(width)
    print(f"\nnarrowest code cell: {min(widths)} px over {len(pages)} pages")
    assert not offenders, (
        f"{len(offenders)} code or output blocks scroll sideways in a {WINDOW[0]}-pixel window "
        f"(shorten the lines; output should wrap, book/_static/bertlab.css):\n" + "\n".join(offenders[:30])
    )


# ------------------------------------------------------------------------------------------------
# screenshots, for a human to look at
# ------------------------------------------------------------------------------------------------
def test_screenshots(tmp_path_factory):
    out = Path(os.environ.get("BERTLAB_SCREENSHOTS") or tmp_path_factory.mktemp("screenshots"))
    out.mkdir(parents=True, exist_ok=True)
    taken = []
    for page in chapter_pages():
        png = out / f"{page.stem}.png"
        result = _chromium(
            "--virtual-time-budget=20000", "--window-size=1280,4000", f"--screenshot={png}", page.as_uri()
        )
        assert result.returncode == 0 and png.exists(), f"no screenshot of {page.name}: {result.stderr[-1000:]}"
        assert png.stat().st_size > 20_000, f"{png} is suspiciously small (a blank page?)"
        taken.append(png)
    print(f"\n{len(taken)} screenshots in {out}")
