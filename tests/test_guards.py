"""Structure guards `make test` runs: the import layers, no import cycles (function-level imports
included), mypy with zero errors, ruff, and no block of six or more lines repeated across modules.

They keep the shape the Suite refactor gave the code: a new suite (or a hurried fix) that imports
upwards, grows a cycle or copies a block fails here, not in review.
"""

from __future__ import annotations

import ast
import hashlib
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "stratbench"
BIN = Path(sys.executable).parent
WINDOW = 6  # lines that make a repeated block


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(args), capture_output=True, text=True, cwd=ROOT, timeout=600)


def suite_packages(src: Path = SRC) -> list[str]:
    """Every suite package (a folder with __init__.py under stratbench/suites/): the independence
    contract covers each of them, listed or not, so a new suite needs no line in pyproject.toml."""
    return sorted(f"stratbench.suites.{p.parent.name}" for p in (src / "suites").glob("*/__init__.py"))


def import_contracts(src: Path = SRC) -> str:
    """pyproject.toml's import-linter contracts with the independence contract's modules replaced
    by every suite package found on disk (TOML, for ``lint-imports --config``)."""
    import tomllib

    conf = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    lines = ["[tool.importlinter]", f'root_package = "{conf["root_package"]}"']
    for c in conf["contracts"]:
        if c["type"] == "independence":
            c = {**c, "modules": suite_packages(src)}
        lines += ["", "[[tool.importlinter.contracts]]"]
        for key, value in c.items():
            lines.append(f"{key} = {json.dumps(value)}")
    return "\n".join(lines) + "\n"


def test_import_layers_and_suite_independence(tmp_path):
    """cli > workflows/report > suites > players > core, and no suite imports another — every suite
    package on disk, whether or not pyproject.toml names it."""
    assert {"stratbench.suites.nashgap", "stratbench.suites.tom"} <= set(suite_packages())
    config = tmp_path / "contracts.toml"
    config.write_text(import_contracts())
    r = _run(str(BIN / "lint-imports"), "--no-cache", "--config", str(config))
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
    assert f"Contracts: {import_contracts().count('[[tool.importlinter.contracts]]')} kept, 0 broken" in r.stdout


def test_a_new_suite_importing_another_fails_the_guard(tmp_path):
    """A copy of the package with one more suite that imports nashgap, unknown to pyproject.toml:
    the derived contract catches it."""
    import os
    import shutil

    copy = tmp_path / "stratbench"
    shutil.copytree(SRC, copy, ignore=shutil.ignore_patterns("__pycache__"))
    (copy / "suites" / "pbeauty").mkdir()
    (copy / "suites" / "pbeauty" / "__init__.py").write_text("from stratbench.suites.nashgap import games\n")
    assert "stratbench.suites.pbeauty" in suite_packages(copy)
    config = tmp_path / "contracts.toml"
    config.write_text(import_contracts(copy))
    r = subprocess.run([str(BIN / "lint-imports"), "--no-cache", "--config", str(config)], capture_output=True,
                       text=True, cwd=tmp_path, timeout=600, env=dict(os.environ, PYTHONPATH=str(tmp_path)))
    assert r.returncode == 1, r.stdout[-3000:] + r.stderr[-2000:]
    assert "stratbench.suites.pbeauty -> stratbench.suites.nashgap" in r.stdout, r.stdout[-3000:]


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on: set[str] = set()
    stack: list[str] = []
    out: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph.get(w, ())))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    x = stack.pop()
                    on.discard(x)
                    comp.append(x)
                    if x == v:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


def test_cycle_finder_finds_cycles():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycles_including_function_level_imports():
    grimp = pytest.importorskip("grimp")
    g = grimp.build_graph("stratbench", cache_dir=None)
    graph = {m: set(g.find_modules_directly_imported_by(m)) for m in g.modules}
    assert _cycles(graph) == []


def test_mypy_reports_no_errors():
    r = _run(sys.executable, "-m", "mypy", "--no-incremental")
    assert r.returncode == 0, r.stdout[-4000:]


def test_ruff_is_clean():
    r = _run(sys.executable, "-m", "ruff", "check", "src", "tests", "benchmarks")
    assert r.returncode == 0, r.stdout[-4000:]


# -- repeated code -----------------------------------------------------------------------------

_PUNCT = re.compile(r"^[\s()\[\]{}:,]*$")


def significant_lines(text: str) -> list[tuple[int, str]]:
    """(line number, text with white space folded) of the lines that carry code: blank lines,
    comments, lone punctuation, imports, docstrings and the parameter lists of function signatures
    are passed over (a CLI command lists the shared options declared once in cli/options.py, in
    the order of its help: a declaration, not repeated logic)."""
    skip: set[int] = set()
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            skip.update(range(node.lineno, (node.end_lineno or node.lineno) + 1))
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            skip.update(range(node.lineno + 1, node.body[0].lineno))  # (the def line itself still counts)
        elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            skip.update(range(node.lineno, (node.end_lineno or node.lineno) + 1))
    out = []
    for i, line in enumerate(text.splitlines(), 1):
        s = " ".join(line.split())
        if i in skip or not s or s.startswith("#") or _PUNCT.match(s):
            continue
        out.append((i, s))
    return out


def repeated_blocks(files: dict[str, str], window: int = WINDOW) -> list[tuple[str, int, str, int]]:
    """Blocks of `window` significant lines that stand, identical, in two different modules."""
    seen: dict[str, tuple[str, int]] = {}
    found: dict[tuple[str, str], tuple[str, int, str, int]] = {}
    for name, text in sorted(files.items()):
        lines = significant_lines(text)
        for k in range(len(lines) - window + 1):
            chunk = "\n".join(s for _, s in lines[k:k + window])
            h = hashlib.sha1(chunk.encode()).hexdigest()
            if h in seen and seen[h][0] != name:
                other, line = seen[h]
                found.setdefault((other, name), (other, line, name, lines[k][0]))
            seen.setdefault(h, (name, lines[k][0]))
    return list(found.values())


def test_repeated_block_finder():
    block = "".join(f"x{i} = compute({i}, y)\n" for i in range(6))
    a = "import os\n" + block + "z = 1\n"
    b = '"""doc"""\n\n# comment\n' + block
    assert repeated_blocks({"a.py": a, "b.py": b}) == [("a.py", 2, "b.py", 4)]
    assert repeated_blocks({"a.py": a, "b.py": block[: block.rindex("x5")]}) == []  # 5 lines only
    assert repeated_blocks({"a.py": a, "b.py": "from x import (\n" + "".join(f"    n{i},\n" for i in range(9)) + ")\n"}) == []
    params = "".join(f"    p{i}: int = {i},\n" for i in range(8))  # two signatures with the same parameters
    assert repeated_blocks({"a.py": f"def f(\n{params}) -> None:\n    pass\n",
                            "b.py": f"def g(\n{params}) -> None:\n    return\n"}) == []


def test_no_block_of_six_lines_repeated_across_modules():
    files = {str(p.relative_to(ROOT)): p.read_text(encoding="utf-8") for p in SRC.rglob("*.py")}
    found = repeated_blocks(files)
    assert not found, "repeated blocks (file:line ~ file:line):\n" + "\n".join(
        f"{a}:{la} ~ {b}:{lb}" for a, la, b, lb in found)
