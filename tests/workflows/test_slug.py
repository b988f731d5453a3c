"""A model label becomes one folder name under its suite's folder, whatever the label."""

from __future__ import annotations

import pytest

from stratbench.workflows.jobs import slug


@pytest.mark.parametrize("label,name", [("..", "model"), (".", "model"), ("...", "model"), ("../../escape", "escape"),
                                        ("a..b", "a..b"), ("gpt-4o", "gpt-4o"), ("/", "model"), ("", "model"),
                                        (".v2", "v2"), ("-.-x", "x")])
def test_a_label_is_one_safe_path_component(label, name):
    """Never hidden either: a label ".v2" made a folder the report passed over (fuzz 24 D3)."""
    assert slug(label) == name and "/" not in slug(label) and slug(label) not in (".", "..")
    assert not slug(label).startswith((".", "-"))
