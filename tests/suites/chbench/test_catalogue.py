"""CHBench catalogue: the transpose reading of the printed matrices, uncertain games, corrections."""

from __future__ import annotations

import json

import numpy as np
import pytest

from stratbench.errors import InputError
from stratbench.suites.chbench.catalogue import (
    build_catalogue,
    intro_example,
    load_corrections,
    recoverable,
    symmetric_2x2_type,
)

CAT = build_catalogue()
BY_ID = {g.id: g for g in CAT}


def test_intro_example_reproduced() -> None:
    ex = intro_example()
    np.testing.assert_allclose(ex.ne_row, [1 / 3, 2 / 3])
    np.testing.assert_allclose(ex.ne_col, [1 / 3, 2 / 3])
    assert ex.u_row_uniform_vs_ne == pytest.approx(2 / 3)
    assert ex.u_col_uniform_vs_ne == pytest.approx(-1 / 6)
    assert ex.u_row_uniform_vs_br == pytest.approx(3.0)
    assert ex.u_col_uniform_vs_br == pytest.approx(0.5)
    assert ex.pure_equilibria == [(0, 1), (1, 0)]


def test_catalogue_classic_games_by_structure() -> None:
    assert len(CAT) == 15
    assert symmetric_2x2_type(BY_ID[1].game) == "prisoners_dilemma"
    assert symmetric_2x2_type(BY_ID[2].game) == "coordination"
    assert symmetric_2x2_type(BY_ID[3].game) == "chicken"  # snowdrift
    assert symmetric_2x2_type(BY_ID[6].game) == "chicken"  # hawk-dove
    # hawk-dove: mutual hawk (first action) is the worst outcome and negative
    a6 = BY_ID[6].game.payoff_row
    assert a6[0, 0] < 0 and a6[0, 0] == a6.min()
    for g in CAT:
        if g.symmetric:
            np.testing.assert_array_equal(g.game.payoff_col, g.game.payoff_row.T)


def test_uncertain_games_flagged() -> None:
    flagged = {g.id for g in CAT if g.uncertain}
    assert flagged == {8, 9, 10, 12, 14, 15}
    assert {g.id for g in recoverable(CAT)} == {1, 2, 3, 4, 5, 6, 7, 11, 13}
    np.testing.assert_array_equal(BY_ID[15].game.payoff_row, [[3, 4, 2], [4, 4, 1], [5, 5, 3]])
    np.testing.assert_array_equal(BY_ID[15].game.payoff_col, [[5, 4, 2], [3, 4, 1], [2, 1, 3]])
    assert "Table-2" in (BY_ID[15].uncertain or "")


def test_corrections_load_and_reject(tmp_path) -> None:
    good = tmp_path / "c.json"
    good.write_text(json.dumps({"8": {"payoff_row": [[1, 2], [3, 4]], "payoff_col": [[0, 1], [1, 0]]}}))
    cat = load_corrections(good, CAT)
    g8 = {g.id: g for g in cat}[8]
    assert g8.uncertain is None and not g8.symmetric
    np.testing.assert_array_equal(g8.game.payoff_col, [[0, 1], [1, 0]])
    bad_cases = [
        "not json",
        json.dumps([1, 2]),
        json.dumps({"99": {"payoff_row": [[1]], "payoff_col": [[1]]}}),
        json.dumps({"8": {"payoff_row": [[1, 2], [3, 4]]}}),
        json.dumps({"8": {"payoff_row": [[1, 2, 3]], "payoff_col": [[1, 2, 3]]}}),
        json.dumps({"8": {"payoff_row": [[1, "x"], [3, 4]], "payoff_col": [[1, 2], [3, 4]]}}),
    ]
    for i, text in enumerate(bad_cases):
        p = tmp_path / f"bad{i}.json"
        p.write_text(text)
        with pytest.raises(InputError) as e:
            load_corrections(p, CAT)
        assert "\n" not in str(e.value)
    with pytest.raises(InputError):
        load_corrections(tmp_path / "missing.json", CAT)


def test_select_games_refuses_repeated_and_non_ascii_ids() -> None:
    from stratbench.suites.chbench.catalogue import select_games

    assert [g.id for g in select_games("2, 1,11")] == [2, 1, 11]
    for games, fragment in (("1,1", "game 1 is listed twice"), ("3,2,03", "game 3 is listed twice"),
                            ("１", "expected all, recoverable or ids"), ("²", "expected all"), ("1,,2", "expected all"),
                            ("99", "no game 99")):
        with pytest.raises(InputError) as e:
            select_games(games)
        assert fragment in str(e.value) and "\n" not in str(e.value)


@pytest.mark.parametrize("text, fragment", [
    (json.dumps({"8": {"payoff_row": [[1, 0], [0, 1]], "payoff_col": [[0, 1], [1, 0]]},
                 "08": {"payoff_row": [[1, 0], [0, 1]], "payoff_col": [[0, 1], [1, 0]]}}), "game 8 is corrected twice"),
    (json.dumps({"٨": {"payoff_row": [[1, 0], [0, 1]], "payoff_col": [[0, 1], [1, 0]]}}), "game id '٨' is not an integer"),
    (json.dumps({"8": {"payoff_row": [[1e308, 0], [0, 1]], "payoff_col": [[0, 1], [1, 0]]}}), "payoffs must lie within"),
    ('{"8": {"payoff_row": [[1, 0], [0, 1]], "payoff_row": [[1, 0], [0, 1]]}}', "duplicate key 'payoff_row'"),
    ("[" * 5000 + "]" * 5000, "nested deeper than 64 levels"),
    ('{"8": {"payoff_row": [[NaN, 0], [0, 1]], "payoff_col": [[0, 1], [1, 0]]}}', "NaN is not allowed"),
    ("", "invalid JSON"),
])
def test_hostile_corrections_files(tmp_path, text, fragment) -> None:
    p = tmp_path / "c.json"
    p.write_text(text, encoding="utf-8")
    with pytest.raises(InputError) as e:
        load_corrections(p, CAT)
    assert str(e.value).startswith(f"--corrections {p}: ") and fragment in str(e.value)
    assert "\n" not in str(e.value)
