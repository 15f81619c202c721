"""Serve the book's JavaScript from the book itself, so that every page renders with no network.

By default a Jupyter Book page loads MathJax, require.js and the ipywidgets HTML manager from
CDNs, and bertviz's output loads require.js, d3 and jQuery from cdnjs. Offline (a classroom
with no internet, a downloaded copy of the site) the math stays raw LaTeX, the widgets stay
blank and bertviz draws nothing. This Sphinx extension (loaded through `local_extensions` in
_config.yml) fixes that:

1. When the HTML build starts it copies the files listed in FILES out of
   book/_vendor/node_modules (installed from the npm registry with the lockfile next to this
   file: `cd book/_vendor && npm ci`) into `_build/html/_static/bertlab-js/`. A missing file
   stops the build with the command that fixes it.
2. On each page that needs require.js (a page with ipywidgets state, or with bertviz output)
   it adds the local require.js, and on widget pages the local ipywidgets HTML manager, both
   AFTER the theme's scripts (require.js defines `define.amd`; a UMD script loaded after it,
   such as the copy button's clipboard.js, would register as an AMD module and break).
3. It rewrites bertviz's output in the page body: the cdnjs <script src=...require.js> tag is
   dropped (the page already has require.js) and the cdnjs paths of d3 and jQuery in its
   `require.config` become the local copies.
4. Any <script src="http..."> or require.js path left pointing off-site is a build warning
   (an error under `jupyter-book build -W`), so a new CDN dependency cannot slip in.

Run as a script (`python book/_vendor/offline_assets.py DEST`) it only does step 1, into DEST.
"""

from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
NODE_MODULES = HERE / "node_modules"
STATIC_SUBDIR = "bertlab-js"  # under _static/; not `vendor/`, which the theme uses

# destination (under _static/bertlab-js/) -> source (under node_modules/); a trailing "/"
# copies a whole folder.
FILES: dict[str, str] = {
    "require.js": "requirejs/require.js",
    "d3.min.js": "d3/dist/d3.min.js",
    "jquery.min.js": "jquery/dist/jquery.min.js",
    "html-manager/": "@jupyter-widgets/html-manager/dist/",
    "mathjax/tex-mml-chtml.js": "mathjax/es5/tex-mml-chtml.js",
    "mathjax/input/": "mathjax/es5/input/",
    "mathjax/output/chtml/": "mathjax/es5/output/chtml/",
    "mathjax/ui/": "mathjax/es5/ui/",
    "mathjax/a11y/": "mathjax/es5/a11y/",
    "mathjax/sre/": "mathjax/es5/sre/",
}
# Not needed in the browser: the standalone (non-AMD) bundle and source maps.
SKIP = re.compile(r"(^|/)(embed\.js|libembed-amd\.js|.*\.map)$")

REQUIRE_JS = f"{STATIC_SUBDIR}/require.js"
WIDGETS_JS = f"{STATIC_SUBDIR}/html-manager/embed-amd.js"
# bertviz's require.config maps module names to CDN URLs; these are served locally instead.
LOCAL_AMD = {"d3": f"{STATIC_SUBDIR}/d3.min", "jquery": f"{STATIC_SUBDIR}/jquery.min"}

CDN_REQUIRE_TAG = re.compile(
    r"<script[^>]*\ssrc=[\"']https?://[^\"']*/require(\.min)?\.js[\"'][^>]*>\s*</script>"
)
AMD_PATH = re.compile(
    r"""(?P<name>\b[A-Za-z_$][\w$]*|["'][\w$-]+["'])\s*:\s*(?P<q>["'])(?P<url>(https?:)?//[^"']+)(?P=q)"""
)
REQUIRE_CONFIG = re.compile(
    r"require(js)?\.config\(\s*\{.*?\}\s*\)", re.S
)  # up to the first "})"
EXTERNAL_SCRIPT = re.compile(
    r"<script[^>]*\ssrc=[\"'](?P<url>(https?:)?//[^\"']+)[\"']"
)


def copy_assets(static_dir: Path) -> int:
    """Copy FILES into static_dir/bertlab-js; returns the number of files copied."""
    missing = [src for src in FILES.values() if not (NODE_MODULES / src).exists()]
    if missing:
        raise FileNotFoundError(
            f"the book's JavaScript is not installed ({', '.join(missing)} missing under "
            f"{NODE_MODULES}); run `cd book/_vendor && npm ci` (or `make setup`)"
        )
    dest_root = static_dir / STATIC_SUBDIR
    copied = 0
    for dest, src in FILES.items():
        source = NODE_MODULES / src
        files = (
            [
                (p, dest_root / dest / p.relative_to(source))
                for p in source.rglob("*")
                if p.is_file()
            ]
            if dest.endswith("/")
            else [(source, dest_root / dest)]
        )
        for s, d in files:
            if SKIP.search(s.as_posix()):
                continue
            if (
                d.exists()
                and d.stat().st_size == s.stat().st_size
                and d.stat().st_mtime >= s.stat().st_mtime
            ):
                continue
            d.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(s, d)
            copied += 1
    return copied


# ---------------------------------------------------------------------------------------------
# The Sphinx extension
# ---------------------------------------------------------------------------------------------
def _builder_inited(app) -> None:
    from sphinx.errors import ExtensionError
    from sphinx.util import logging

    if app.builder.format != "html":
        return
    try:
        n = copy_assets(Path(app.outdir) / "_static")
    except FileNotFoundError as e:
        raise ExtensionError(str(e)) from None
    logging.getLogger(__name__).info(
        f"offline_assets: {n} files copied to _static/{STATIC_SUBDIR}"
    )


def _page_uses_widgets(app, pagename: str) -> bool:
    try:
        from myst_nb.sphinx_ import NbMetadataCollector
    except ImportError:
        return False
    return "ipywidgets_state" in NbMetadataCollector.get_js_files(app.env, pagename)


def _html_page_context(app, pagename, templatename, context, doctree) -> None:
    from sphinx.util import logging

    logger = logging.getLogger(__name__)
    body = context.get("body", "")
    widgets = _page_uses_widgets(app, pagename)
    uses_require = widgets or "require.config(" in body or "requirejs(" in body
    if not uses_require:
        return

    # 3. bertviz: drop its CDN require.js tag, point its AMD paths at the local copies.
    pathto = context["pathto"]

    def local_path(match: re.Match) -> str:
        name = match.group("name").strip("'\"")
        if name not in LOCAL_AMD:
            return match.group(0)
        return f"{match.group('name')}: {match.group('q')}{pathto('_static/' + LOCAL_AMD[name], 1)}{match.group('q')}"

    body = CDN_REQUIRE_TAG.sub("", body)
    body = REQUIRE_CONFIG.sub(lambda m: AMD_PATH.sub(local_path, m.group(0)), body)
    context["body"] = body

    # 2. require.js and the widget manager, after the theme's scripts (Sphinx gives
    # html_js_files priority 800 and extensions' files 500).
    app.add_js_file(REQUIRE_JS, priority=900)
    if widgets:
        app.add_js_file(WIDGETS_JS, priority=901)

    # 4. Nothing may still point off-site.
    for m in EXTERNAL_SCRIPT.finditer(body):
        logger.warning(
            f"offline_assets: page {pagename} loads a script from {m.group('url')}; "
            f"serve it from book/_vendor instead",
            type="offline_assets",
        )
    for m in (
        m for c in REQUIRE_CONFIG.finditer(body) for m in AMD_PATH.finditer(c.group(0))
    ):
        logger.warning(
            f"offline_assets: page {pagename} maps the AMD module {m.group('name')} to "
            f"{m.group('url')}; add it to LOCAL_AMD in book/_vendor/offline_assets.py",
            type="offline_assets",
        )


def setup(app):
    app.connect("builder-inited", _builder_inited)
    app.connect("html-page-context", _html_page_context)
    return {"parallel_read_safe": True, "parallel_write_safe": True, "version": "1"}


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(
            "usage: python book/_vendor/offline_assets.py DEST  (copies into DEST/bertlab-js)"
        )
    print(
        f"{copy_assets(Path(sys.argv[1]))} files copied to {Path(sys.argv[1]) / STATIC_SUBDIR}"
    )
