"""The docs hold together: every relative link of README.md and docs/ points at a file that exists
and, with a #fragment, at one of its headings; every page under docs/ is reachable from the
README by following links."""

from __future__ import annotations

from pathlib import Path

import pytest
from docs_pages import README, ROOT, anchors, links, pages, rel

EXTERNAL = ("http://", "https://", "mailto:")


def _target(page: Path, target: str) -> tuple[Path, str]:
    path, _, fragment = target.partition("#")
    return ((page.parent / path).resolve() if path else page), fragment


@pytest.mark.parametrize("page", pages(), ids=rel)
def test_every_relative_link_resolves(page):
    broken = []
    for line, target in links(page):
        if target.startswith(EXTERNAL):
            continue
        path, fragment = _target(page, target)
        if not path.exists():
            broken.append(f"{rel(page)}:{line}: {target} (no such file)")
        elif fragment and path.suffix == ".md" and fragment not in anchors(path):
            broken.append(f"{rel(page)}:{line}: {target} (no heading #{fragment} in {rel(path)})")
    assert broken == []


def test_every_page_is_reachable_from_the_readme():
    seen, todo = {README}, [README]
    while todo:
        page = todo.pop()
        for _, target in links(page):
            if target.startswith(EXTERNAL):
                continue
            path, _ = _target(page, target)
            if path.suffix == ".md" and path.is_file() and path not in seen:
                seen.add(path)
                todo.append(path)
    assert sorted(rel(p) for p in set(pages()) - seen) == []


def test_the_readme_stays_a_front_door():
    assert len(README.read_text(encoding="utf-8").splitlines()) <= 250
    assert (ROOT / "docs").is_dir()
