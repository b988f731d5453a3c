"""A model label becomes one folder name under its suite's folder, whatever the label."""

from __future__ import annotations

import pytest

from stratbench.workflows.jobs import slug


@pytest.mark.parametrize("label,name", [("..", "model"), (".", "model"), ("...", "model"), ("../../escape", "..-..-escape"),
                                        ("a..b", "a..b"), ("gpt-4o", "gpt-4o"), ("/", "model"), ("", "model")])
def test_a_label_is_one_safe_path_component(label, name):
    assert slug(label) == name and "/" not in slug(label) and slug(label) not in (".", "..")
