"""The package's shape: bertlab's modules sit in folders by layer and import only downward (the
group map below), they import each other without cycles, none reaches into another's private
names, and a bertlab module is imported inside a function only where that buys start-up time,
with a comment saying so.

Every .py file under bertlab/ is parsed with `ast` (nothing is imported), and every import of a bertlab
module counts, the ones inside functions included: a function-local import only delays a cycle
to the first call, it does not remove it."""

from __future__ import annotations

import ast
import itertools
import re
from dataclasses import dataclass, field
from pathlib import Path

PACKAGE = "bertlab"
ROOT = Path(__file__).resolve().parent.parent / PACKAGE


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join((PACKAGE, *parts))


MODULES = {module_name(p): p for p in sorted(ROOT.rglob("*.py"))}


def is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


@dataclass
class ModuleImports:
    name: str
    imports: dict[str, int] = field(default_factory=dict)  # bertlab module -> first line importing it
    private: list[str] = field(default_factory=list)  # "line N: what" for each private access


def resolve(node: ast.ImportFrom, importer: str) -> str | None:
    """The absolute module name of a `from ... import` (relative imports resolved)."""
    if node.level:  # relative: from .x import y, from . import y
        base = importer if importer == PACKAGE else importer.rpartition(".")[0]
        for _ in range(node.level - 1):
            base = base.rpartition(".")[0]
        return f"{base}.{node.module}" if node.module else base
    return node.module


def scan(name: str, source: str, modules: set[str] | dict = MODULES) -> ModuleImports:
    """The bertlab modules that module `name` imports (anywhere in it), and the private names
    it takes from other bertlab modules: `from bertlab.x import _y`, or `x._y` / `bertlab.x._y`
    where x is bound to a bertlab module."""
    tree = ast.parse(source, filename=name)
    found = ModuleImports(name)
    aliases: dict[str, str] = {}  # local name -> the bertlab module it is bound to

    def edge(target: str, line: int) -> None:
        if target != name and target in modules:
            found.imports.setdefault(target, line)

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name == PACKAGE or a.name.startswith(PACKAGE + "."):
                    edge(a.name, node.lineno)
                    if a.asname:
                        aliases[a.asname] = a.name
                    else:  # `import bertlab.x` binds `bertlab`; bertlab.x._y is caught below
                        aliases[PACKAGE] = PACKAGE
        elif isinstance(node, ast.ImportFrom):
            source = resolve(node, name)
            if source is None or not (source == PACKAGE or source.startswith(PACKAGE + ".")):
                continue
            for a in node.names:
                submodule = f"{source}.{a.name}"
                if submodule in modules:  # from bertlab.tasks import squad
                    edge(submodule, node.lineno)
                    aliases[a.asname or a.name] = submodule
                    continue
                edge(source, node.lineno)
                if is_private(a.name) and source != name:
                    found.private.append(f"line {node.lineno}: from {source} import {a.name}")

    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and is_private(node.attr):
            target = dotted(node.value, aliases)
            if target in modules and target != name:
                found.private.append(f"line {node.lineno}: {target}.{node.attr}")
    return found


def dotted(node: ast.expr, aliases: dict[str, str]) -> str | None:
    """The bertlab module an expression such as `ckpt` or `bertlab.checkpoint` names, if any."""
    if isinstance(node, ast.Name):
        return aliases.get(node.id)
    if isinstance(node, ast.Attribute):
        base = dotted(node.value, aliases)
        return f"{base}.{node.attr}" if base is not None else None
    return None


SCANNED = {name: scan(name, path.read_text(encoding="utf-8")) for name, path in MODULES.items()}
GRAPH = {name: sorted(m.imports) for name, m in SCANNED.items()}


def find_cycles(graph: dict[str, list[str]]) -> list[list[str]]:
    """Cycles (a -> b -> ... -> a) of the import graph: the strongly connected components of more
    than one module (or a module importing itself), by Tarjan's algorithm, and in each a shortest
    cycle through every module of it (until each is in one of the cycles reported)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, []):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1 or v in graph.get(v, []):
                components.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)

    cycles = []
    for component in components:
        members, covered = set(component), set()
        for start in component:  # a shortest cycle through each module not yet in one
            if start in covered:
                continue
            paths = {w: [start, w] for w in graph[start] if w in members}  # breadth first
            frontier = list(paths)
            while start not in paths:
                next_frontier = []
                for u in frontier:
                    for w in graph[u]:
                        if w in members and w not in paths:
                            paths[w] = paths[u] + [w]
                            next_frontier.append(w)
                frontier = next_frontier
            cycles.append(paths[start])
            covered.update(paths[start])
    return sorted(cycles)


def describe(cycle: list[str]) -> str:
    steps = []
    for a, b in itertools.pairwise(cycle):
        steps.append(f"{a} (line {SCANNED[a].imports[b]})")
    return " -> ".join(steps + [cycle[-1]])


# The layers, bottom to top. A module's layer is its folder; the modules at the top of the package
# are the core (config, model, checkpoint, runtime, files, ...), except the entry points, which
# may import any layer below the course.
LAYERS = ("core", "data", "tasks", "training", "analysis", "experiments", "course", "exercises", "entry")
ENTRY = {"bertlab.__main__", "bertlab.export"}
# What each layer never imports. Analysis sits beside tasks and training, not above them: a model
# is looked into without its training loop or a task's data.
NEVER = {
    "core": set(LAYERS) - {"core"},
    "data": {"tasks", "training", "analysis", "experiments", "course", "exercises", "entry"},
    "tasks": {"training", "analysis", "experiments", "course", "exercises", "entry"},
    "training": {"analysis", "experiments", "course", "exercises", "entry"},
    "analysis": {"tasks", "training", "experiments", "course", "exercises", "entry"},
    "experiments": {"course", "exercises", "entry"},
    "course": {"exercises", "entry"},
    "exercises": {"entry"},
    "entry": {"course", "exercises"},
}


def layer(name: str) -> str:
    """The layer of module `name`: its folder under bertlab/, "core" at the top, "entry" for ENTRY."""
    if name in ENTRY:
        return "entry"
    parts = name.split(".")
    return parts[1] if len(parts) > 1 and (ROOT / parts[1]).is_dir() else "core"


def test_every_module_is_scanned():
    files = sorted(ROOT.rglob("*.py"))
    assert len(SCANNED) == len(files) > 40  # every file under bertlab/, subfolders included
    assert {
        "bertlab",
        "bertlab.model",
        "bertlab.tasks",
        "bertlab.tasks.inputs",
        "bertlab.training.pretrain",
        "bertlab.exercises",
    } <= set(MODULES)
    assert "bertlab.model" in GRAPH["bertlab.tasks"]
    unknown = sorted(name for name in MODULES if layer(name) not in LAYERS)
    assert not unknown, f"modules in a folder the layer map does not know (add it to LAYERS and NEVER): {unknown}"
    folders = sorted(p.name for p in ROOT.iterdir() if p.is_dir() and any(p.glob("*.py")))
    assert set(folders) <= set(LAYERS), folders


def test_layers_import_only_downward():
    wrong = [
        f"{name} ({layer(name)}) imports {target} ({layer(target)}), line {SCANNED[name].imports[target]}"
        for name, targets in GRAPH.items()
        for target in targets
        if layer(target) in NEVER[layer(name)]
    ]
    assert not wrong, "imports against the layer map:\n  " + "\n  ".join(wrong)


def test_the_layer_map_is_a_partial_order():
    """No layer may import one that may import it back (the map itself has no cycle)."""
    allowed = {a: [b for b in LAYERS if b != a and b not in NEVER[a]] for a in LAYERS}
    assert find_cycles(allowed) == []
    assert layer("bertlab.training.pretrain") == "training" and layer("bertlab.model") == "core"
    assert layer("bertlab") == "core" and layer("bertlab.__main__") == "entry"


def test_no_import_cycles():
    cycles = find_cycles(GRAPH)
    assert not cycles, "bertlab modules import each other in a cycle (function-local imports count):\n  " + "\n  ".join(
        describe(c) for c in cycles
    )


def test_no_private_names_across_modules():
    found = [f"{name}, {what}" for name, m in SCANNED.items() for what in m.private]
    assert not found, (
        "private names used from another bertlab module (make them public in "
        "their module, or keep them inside it):\n  " + "\n  ".join(found)
    )


def test_the_checker_finds_cycles():
    assert find_cycles({"a": ["b"], "b": ["c"], "c": ["a"], "d": ["a"]}) == [["a", "b", "c", "a"]]
    assert find_cycles({"a": ["b", "c"], "b": ["a"], "c": ["a"]}) == [["a", "b", "a"], ["c", "a", "c"]]
    assert find_cycles({"a": ["a"]}) == [["a", "a"]]
    assert find_cycles({"a": ["b"], "b": []}) == []


def test_the_checker_sees_imports_in_functions_and_private_names():
    modules = {"bertlab", "bertlab.a", "bertlab.b", "bertlab.c"}
    source = """
import torch
from bertlab.b import public, _private
from bertlab import c as see
import bertlab.c

def f():
    from bertlab import a as me
    import bertlab.b as bee
    return bee._hidden, see._also, bertlab.c._too, see.__name__, me._own, torch._C, see.ok
"""
    found = scan("bertlab.a", source, modules)
    assert sorted(found.imports) == ["bertlab.b", "bertlab.c"]
    assert [p.split(": ", 1)[1] for p in found.private] == [
        "from bertlab.b import _private",
        "bertlab.b._hidden",
        "bertlab.c._also",
        "bertlab.c._too",
    ]
    assert scan("bertlab.b", "from . import a\nfrom .c import _x\n", modules).private == [
        "line 2: from bertlab.c import _x"
    ]


LOCAL_MARK = "# local:"


def function_local_imports(source: str, modules: set[str] | dict = MODULES, name: str = "") -> list[tuple[int, bool]]:
    """(line, commented) for every import of a bertlab module inside a function of `source`.
    Commented: `# local: <why>` on the import's line, or in the comment lines right above the block
    of consecutive import lines it belongs to."""
    tree = ast.parse(source)
    lines = source.splitlines()
    found = []
    for fn in ast.walk(tree):
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for node in ast.walk(fn):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                targets = [resolve(node, name or PACKAGE + ".x") or ""]
            else:
                continue
            if not any(t == PACKAGE or t.startswith(PACKAGE + ".") for t in targets):
                continue
            found.append((node.lineno, _marked(lines, node.lineno)))
    return sorted(set(found))


def _marked(lines: list[str], lineno: int) -> bool:
    if LOCAL_MARK in lines[lineno - 1]:
        return True
    i = lineno - 2
    while i >= 0 and lines[i].strip().startswith(("from ", "import ")):  # the block of imports
        if LOCAL_MARK in lines[i]:
            return True
        i -= 1
    while i >= 0 and lines[i].strip().startswith("#"):  # the comment above it
        if LOCAL_MARK in lines[i]:
            return True
        i -= 1
    return False


def test_function_local_imports_say_why():
    """A bertlab module imported inside a function (bertlab's own __init__ loads torch anyway) is
    there for start-up time only: `# local: <why>` says so, on its line or just above its block."""
    bare = [
        f"{MODULES[name].relative_to(ROOT.parent)}:{line}"
        for name, path in MODULES.items()
        for line, commented in function_local_imports(path.read_text(encoding="utf-8"), name=name)
        if not commented
    ]
    assert not bare, (
        "function-local imports of bertlab modules without a `# local: <why>` comment (import "
        "them at the top, or say what the delay buys):\n  " + "\n  ".join(bare)
    )


def test_the_local_import_check_can_fail():
    source = """
import bertlab.config

def f():
    import json
    from bertlab import model
    # local: keeps the CLI light
    from bertlab.training import pretrain
    from bertlab.training.finetune import finetune
    from bertlab.tasks import get_task  # local: a heavy table
    return model, pretrain, finetune, get_task, json
"""
    assert function_local_imports(source) == [(6, False), (8, True), (9, True), (10, True)]


def test_the_task_modules_import_downward():
    """task_inputs <- squad, ner <- tasks: the shared inputs know no task, squad and ner know
    no task table."""
    tasks = ("bertlab.tasks", "bertlab.tasks.squad", "bertlab.tasks.ner")
    assert not {m for m in GRAPH["bertlab.tasks.inputs"] if m in tasks}
    for name in ("bertlab.tasks.squad", "bertlab.tasks.ner", "bertlab.tasks.feature_based"):
        assert "bertlab.tasks" not in GRAPH[name], f"{name} imports bertlab.tasks"


def test_the_package_map_lists_every_module_in_its_folder():
    """bertlab/README.md has a section per folder naming each of its modules, and no module it names
    is missing."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    listed: dict[str, set[str]] = {}
    for section in re.split(r"^## ", text, flags=re.M)[1:]:
        found = re.match(r"`bertlab/(\w*)/?`", section)
        if found:
            listed[found.group(1)] = set(re.findall(r"`(\w+\.py)`", section)) - {"__init__.py"}
    assert listed, "bertlab/README.md has no section per folder (headings starting with ## `bertlab/...`)"
    for folder in sorted({p.parent for p in ROOT.rglob("*.py")}):
        key = "" if folder == ROOT else folder.name
        files = {p.name for p in folder.glob("*.py")} - {"__init__.py"}
        assert key in listed, f"bertlab/README.md has no section for bertlab/{key}"
        assert files - listed[key] == set(), f"bertlab/{key}: not in bertlab/README.md: {sorted(files - listed[key])}"
        extra = sorted(listed[key] - files)
        assert not extra, f"bertlab/{key}: in bertlab/README.md, not on disk: {extra}"


# ------------------------------------------------------------------------------------------------
# The lab (lab/ beside the package, not installed): bertlab never imports it, and it uses only
# bertlab's public names, as a reader's code would.
# ------------------------------------------------------------------------------------------------
LAB = ROOT.parent / "lab"


def imports_of_lab(source: str, filename: str = "<source>", top: str = "lab") -> list[str]:
    """Each import of `top` (the lab unless told) or a module under it in `source`, anywhere, as "line N: what";
    `importlib.import_module("lab...")` included."""
    found = []
    for node in ast.walk(ast.parse(source, filename=filename)):
        names = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            names = [node.module]
        elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
            func = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            if func in ("import_module", "__import__") and isinstance(node.args[0].value, str):
                names = [node.args[0].value]
        found += [f"line {node.lineno}: {n}" for n in names if n == top or n.startswith(f"{top}.")]
    return found


def lab_sources() -> dict[str, str]:
    """Every Python file under lab/ and the code cells of its notebook pages (IPython's %magic and
    !shell lines read as `pass`), by path."""
    import json

    sources = {str(p.relative_to(ROOT.parent)): p.read_text(encoding="utf-8") for p in sorted(LAB.rglob("*.py"))}
    for path in sorted(LAB.rglob("*.ipynb")):
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        code = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")
        sources[str(path.relative_to(ROOT.parent))] = re.sub(r"(?m)^(\s*)[%!].*$", r"\1pass", code)
    return sources


def test_bertlab_never_imports_the_lab():
    found = {name: imports_of_lab(path.read_text(encoding="utf-8"), str(path)) for name, path in MODULES.items()}
    found = {name: lines for name, lines in found.items() if lines}
    assert not found, f"bertlab modules import the lab (lab/ is not installed with bertlab): {found}"


def private_names(sources: dict[str, str]) -> dict[str, list[str]]:
    """For each source outside bertlab, the private bertlab names it takes or modules it imports."""
    private = {}
    for name, source in sources.items():
        scanned = scan(name, source)
        hidden = [m for m in scanned.imports if any(is_private(part) for part in m.split("."))]
        if scanned.private or hidden:
            private[name] = scanned.private + [f"imports {m}" for m in hidden]
    return private


def test_the_lab_uses_only_bertlab_public_names():
    sources = lab_sources()
    assert {"lab/__init__.py", "lab/speed.py", "lab/finetune_speed.py"} <= set(sources)
    assert any(name.startswith("lab/benchmarks/") for name in sources)
    assert any(name.startswith("lab/notebook/") for name in sources)
    private = private_names(sources)
    assert not private, f"the lab takes private bertlab names (use public ones, or make them public): {private}"


def test_the_lab_checks_can_fail():
    source = "import os\nfrom lab import speed\n\ndef f():\n    import lab.finetune_speed as fs\n"
    source += "    return importlib.import_module('lab.speed')\nfrom labrador import dog\n"
    assert imports_of_lab(source) == ["line 2: lab", "line 5: lab.finetune_speed", "line 6: lab.speed"]
    private = scan("lab/x.py", "from bertlab.prose import _words\nimport bertlab.prose as p\np._count\n")
    assert private.private == ["line 1: from bertlab.prose import _words", "line 3: bertlab.prose._count"]


# The instructors' grader (grader/ beside the package, not installed) is held to the lab's rules.
GRADER = ROOT.parent / "grader"


def test_bertlab_never_imports_the_grader():
    found = {
        name: imports_of_lab(path.read_text(encoding="utf-8"), str(path), "grader") for name, path in MODULES.items()
    }
    found = {name: lines for name, lines in found.items() if lines}
    assert not found, f"bertlab modules import the grader (grader/ is not installed with bertlab): {found}"
    assert imports_of_lab("import grader.grading\nimport graders\n", top="grader") == ["line 1: grader.grading"]


def test_the_grader_uses_only_bertlab_public_names():
    sources = {str(p.relative_to(ROOT.parent)): p.read_text(encoding="utf-8") for p in sorted(GRADER.rglob("*.py"))}
    assert {"grader/__init__.py", "grader/__main__.py", "grader/grading.py", "grader/course.py"} <= set(sources)
    # one direction: the grading imports the course table, which imports nothing of the grader
    table = sources["grader/course.py"]
    relative = [n.lineno for n in ast.walk(ast.parse(table)) if isinstance(n, ast.ImportFrom) and n.level]
    assert not imports_of_lab(table, top="grader") and not relative, "grader/course.py imports the grader"
    private = private_names(sources)
    assert not private, f"the grader takes private bertlab names (use public ones, or make them public): {private}"


# The package is what students install and read: it grows when a chapter or an exercise does (raise
# the budget in the commit that adds one); the project's own studies live in lab/, the instructors'
# tools in grader/.
PACKAGE_LINES = 16_000
MODULE_LINES = 800


def package_size(files: dict[str, Path] = MODULES) -> tuple[int, dict[str, int]]:
    """bertlab's total line count and the modules over MODULE_LINES."""
    sizes = {name: len(path.read_text(encoding="utf-8").splitlines()) for name, path in files.items()}
    return sum(sizes.values()), {name: n for name, n in sizes.items() if n > MODULE_LINES}


def test_the_package_stays_small():
    total, large = package_size()
    assert not large, f"modules over {MODULE_LINES} lines (split them, one concept per module): {large}"
    assert total <= PACKAGE_LINES, (
        f"bertlab is {total} lines, over its budget of {PACKAGE_LINES}: move the project's own studies "
        "to lab/ and publish their results as data (lab/README.md), instructors' tools to grader/, or "
        "raise the budget with the chapter or exercise that needs the code"
    )


def test_the_size_budget_can_fail(tmp_path):
    big = tmp_path / "big.py"
    big.write_text("x = 1\n" * (MODULE_LINES + 1))
    total, large = package_size({"bertlab.big": big})
    assert total == MODULE_LINES + 1 and large == {"bertlab.big": MODULE_LINES + 1}
