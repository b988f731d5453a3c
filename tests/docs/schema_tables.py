"""The key tables of docs/results.md, generated from the code's schema definitions.

Every result file with a written schema has one in the code: a ``TypedDict`` in
`stratbench.runner.schema` (run.json), a suite's ``records`` module (its JSONL records, summaries
and run.json totals) or `stratbench.scoring` (scorecard.json, cost.json). Each key's comment in
the class is the key's documentation. This module renders every such class as a Markdown table
(key, type, required or optional, what it holds) between two marker comments in docs/results.md:

    <!-- schema: stratbench.suites.nashgap.records.TrialRecord -->
    ...generated...
    <!-- /schema -->

`tests/docs/test_results_schemas.py` checks that the tables are the ones the code gives (so a
key added, removed or redocumented in the code fails the test until the page is regenerated), and
that every TypedDict of those modules has its table. Regenerate the page with

    PYTHONPATH=src python tests/docs/schema_tables.py --write
"""

from __future__ import annotations

import ast
import importlib
import inspect
import io
import re
import sys
import tokenize
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
RESULTS_MD = ROOT / "docs" / "results.md"

#: the modules whose TypedDicts are the written schemas of result files
SCHEMA_MODULES = (
    "stratbench.runner.schema",
    "stratbench.suites.nashgap.records",
    "stratbench.suites.tmgbench.records",
    "stratbench.suites.chbench.records",
    "stratbench.suites.tom.records",
    "stratbench.scoring",
)

BLOCK = re.compile(r"<!-- schema: (?P<name>[\w.]+) -->\n(?P<body>.*?)<!-- /schema -->", re.S)


def schema_classes() -> list[str]:
    """Every TypedDict defined in the schema modules, as ``module.Class``."""
    out = []
    for mod_name in SCHEMA_MODULES:
        mod = importlib.import_module(mod_name)
        for name, obj in vars(mod).items():
            if (inspect.isclass(obj) and obj.__module__ == mod_name and hasattr(obj, "__required_keys__")
                    and hasattr(obj, "__total__")):
                out.append(f"{mod_name}.{name}")
    return sorted(out)


def _resolve(path: str) -> tuple[Any, Any]:
    mod_name, cls_name = path.rsplit(".", 1)
    mod = importlib.import_module(mod_name)
    return mod, getattr(mod, cls_name)


def keys_of(path: str) -> set[str]:
    """The keys a TypedDict holds, its bases' included (what a file may have)."""
    _, cls = _resolve(path)
    return set(cls.__required_keys__) | set(cls.__optional_keys__)


def _class_node(path: str) -> tuple[str, ast.ClassDef]:
    mod, cls = _resolve(path)
    source = Path(inspect.getsourcefile(mod) or "").read_text(encoding="utf-8")
    node = next(n for n in ast.walk(ast.parse(source)) if isinstance(n, ast.ClassDef) and n.name == cls.__name__)
    return source, node


def own_keys(path: str) -> list[str]:
    """The keys a TypedDict's own body declares, in order (its bases' keys are their tables')."""
    _, node = _class_node(path)
    return [s.target.id for s in node.body if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)]


def bases_of(path: str) -> list[str]:
    """The TypedDict bases of a schema class, as ``module.Class``."""
    mod, cls = _resolve(path)
    source, node = _class_node(path)
    out = []
    for b in node.bases:
        name = ast.get_source_segment(source, b) or ""
        base = getattr(mod, name, None)
        if name != "TypedDict" and base is not None and hasattr(base, "__required_keys__"):
            out.append(f"{base.__module__}.{base.__name__}")
    return out


def _comments(source: str) -> dict[int, tuple[str, bool]]:
    """line number → (comment text, whether the line holds nothing but the comment)."""
    out = {}
    lines = source.splitlines()
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT:
            row, col = tok.start
            alone = not lines[row - 1][:col].strip()
            out[row] = (tok.string.lstrip("#").strip(), alone)
    return out


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _prose(text: str) -> str:
    """A comment as a table cell of prose: ``<think>`` shown, not taken for HTML."""
    return _cell(text).replace("<", "&lt;").replace(">", "&gt;")


def _unwrap(annotation: str) -> tuple[str, str | None]:
    """``NotRequired[X]`` → (X, "optional"), ``Required[X]`` → (X, "required"), else (X, None)."""
    for wrapper, kind in (("NotRequired", "optional"), ("Required", "required")):
        if annotation.startswith(wrapper + "[") and annotation.endswith("]"):
            return annotation[len(wrapper) + 1:-1], kind
    return annotation, None


def render(path: str) -> str:
    """The Markdown of one TypedDict: its docstring, then a row per key in the class's order and a
    row for each comment of the class that belongs to no single key, where it stands."""
    mod, cls = _resolve(path)
    source = Path(inspect.getsourcefile(mod) or "").read_text(encoding="utf-8")
    tree = ast.parse(source)
    node = next(n for n in ast.walk(tree) if isinstance(n, ast.ClassDef) and n.name == cls.__name__)
    comments = _comments(source)
    total = not any(k.arg == "total" and isinstance(k.value, ast.Constant) and k.value.value is False
                    for k in node.keywords)
    bases = [ast.get_source_segment(source, b) for b in node.bases]
    bases = [b for b in bases if b and b != "TypedDict"]
    doc = ast.get_docstring(node) or ""
    head = f"`{cls.__name__}`" + (f" — {_prose(' '.join(doc.split()))}" if doc else "")
    if bases:
        head += f" Holds every key of {', '.join(f'`{b}`' for b in bases)} too."
    rows = ["| key | type | | what |", "| --- | --- | --- | --- |"]
    fields = [s for s in node.body if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)]
    start = node.body[0].end_lineno if doc else node.lineno  # after the docstring
    pending: list[str] = []  # full-line comments waiting for the key they precede

    def flush_notes() -> None:
        for note in pending:
            rows.append(f"| | | | {_prose(note)} |")
        pending.clear()

    line = (start or node.lineno) + 1
    for f in fields:
        for ln in range(line, f.lineno):
            c = comments.get(ln)
            if c and c[1]:
                pending.append(c[0])
        annotation = ast.get_source_segment(source, f.annotation) or ""
        typ, kind = _unwrap(" ".join(annotation.split()))
        inline = comments.get(f.end_lineno or f.lineno)
        what = inline[0] if inline and not inline[1] else ""
        if not what and pending:  # a comment block just above a key without its own comment is its comment
            what, pending[:] = " ".join(pending), []
        flush_notes()
        required = kind or ("required" if total else "optional")
        rows.append(f"| `{f.target.id}` | `{_cell(typ)}` | {required} | {_prose(what)} |")
        line = (f.end_lineno or f.lineno) + 1
    for ln in range(line, (node.end_lineno or line) + 1):
        c = comments.get(ln)
        if c and c[1]:
            pending.append(c[0])
    flush_notes()
    return head + "\n\n" + "\n".join(rows) + "\n"


def generate(text: str) -> str:
    """``text`` with every schema block regenerated from the code."""
    return BLOCK.sub(lambda m: f"<!-- schema: {m['name']} -->\n{render(m['name'])}<!-- /schema -->", text)


def documented(text: str) -> dict[str, set[str]]:
    """Schema block name → the keys its table lists (the first column of its rows)."""
    out = {}
    for m in BLOCK.finditer(text):
        out[m["name"]] = set(re.findall(r"^\| `([^`]+)` \|", m["body"], re.M))
    return out


def main(argv: list[str]) -> int:
    text = RESULTS_MD.read_text(encoding="utf-8")
    new = generate(text)
    if "--write" in argv:
        RESULTS_MD.write_text(new, encoding="utf-8")
        print(f"{RESULTS_MD} regenerated")
        return 0
    missing = sorted(set(schema_classes()) - set(documented(text)))
    for name in missing:
        print(f"<!-- schema: {name} -->\n{render(name)}<!-- /schema -->\n")
    return 0 if new == text and not missing else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
