"""The normal-form game type: validation, labels, JSON files."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stratbench.errors import GameFormatError, InputError
from stratbench.games import (
    MAX_ACTIONS,
    NormalFormGame,
    game_from_dict,
    game_to_dict,
    load_games,
    save_games,
)

# --------------------------------------------------------------------------------------------
# NormalFormGame validation
# --------------------------------------------------------------------------------------------

def _write(tmp_path, text, name="games.json"):
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return p


@pytest.mark.parametrize(
    "matrix, fragment",
    [
        ([[1, 2], [3]], "ragged"),
        ([[1, 2, 3], [4, 5, 6], [7, 8]], "row 2 has 2"),
        ([[1.0, float("nan")]], "not finite"),
        ([[float("inf"), 1.0]], "not finite"),
        ([[1.0], [float("-inf")]], "not finite"),
        ([[1, "2"]], "not a number"),
        ([["one", 2]], "not a number"),
        ([[True, 0]], "not a number"),
        ([[0, False]], "not a number"),
        ([[1, None]], "not a number"),
        ([], "zero rows"),
        ([[], []], "zero columns"),
        ([[]], "zero columns"),
        ("1 2 3", "list of rows"),
        ([1, 2], "row 0 is not a list"),
    ],
)
def test_zero_sum_rejects_bad_matrix(matrix, fragment):
    with pytest.raises(GameFormatError) as exc:
        NormalFormGame.zero_sum(matrix)
    assert fragment in str(exc.value)
    assert "\n" not in str(exc.value)  # one-line message


@pytest.mark.parametrize(
    "matrix, fragment",
    [
        (np.array([[1.0, np.nan]]), "not finite"),
        (np.array([[np.inf]]), "not finite"),
        (np.zeros((0, 3)), "zero rows"),
        (np.zeros((2, 0)), "zero columns"),
    ],
)
def test_rejects_bad_numpy_matrix(matrix, fragment):
    with pytest.raises(GameFormatError, match=fragment):
        NormalFormGame(matrix, matrix)


def test_error_message_names_the_bad_cell():
    with pytest.raises(GameFormatError) as exc:
        NormalFormGame.zero_sum([[1, 2], [3, "x"]])
    assert "[1][1]" in str(exc.value)
    assert "'x'" in str(exc.value)


def test_error_message_names_payoff_col():
    with pytest.raises(GameFormatError, match="payoff_col"):
        NormalFormGame([[1, 2]], [[1, float("nan")]])


@pytest.mark.parametrize("shape", [(1, MAX_ACTIONS + 1), (MAX_ACTIONS + 1, 1)])
def test_rejects_more_than_max_actions(shape):
    assert MAX_ACTIONS == 1000
    with pytest.raises(GameFormatError) as exc:
        NormalFormGame.zero_sum(np.zeros(shape))
    assert "at most 1000" in str(exc.value)
    assert f"{shape[0]}x{shape[1]}" in str(exc.value)


def test_accepts_exactly_max_actions():
    g = NormalFormGame.zero_sum(np.zeros((1, MAX_ACTIONS)))
    assert g.shape == (1, 1000)
    assert len(g.col_labels) == 1000


def test_shape_mismatch_between_players():
    with pytest.raises(GameFormatError) as exc:
        NormalFormGame([[1, 2]], [[1], [2]])
    assert "payoff_row is 1x2 but payoff_col is 2x1" in str(exc.value)


def test_duplicate_labels():
    with pytest.raises(GameFormatError) as exc:
        NormalFormGame.zero_sum([[1, 2], [3, 4]], row_labels=["U", "U"])
    assert "not unique" in str(exc.value)
    assert "'U'" in str(exc.value)
    with pytest.raises(GameFormatError, match="column player labels are not unique"):
        NormalFormGame.zero_sum([[1, 2], [3, 4]], col_labels=["L", "L"])


def test_label_count_and_content():
    with pytest.raises(GameFormatError, match="2 actions but 3 labels"):
        NormalFormGame.zero_sum([[1, 2], [3, 4]], row_labels=["a", "b", "c"])
    with pytest.raises(GameFormatError, match="non-empty"):
        NormalFormGame.zero_sum([[1, 2], [3, 4]], row_labels=["a", "  "])
    with pytest.raises(GameFormatError, match="list of strings"):
        NormalFormGame.zero_sum([[1, 2], [3, 4]], row_labels=[1, 2])


def test_default_labels_and_readonly_arrays():
    g = NormalFormGame.zero_sum([[1, 2, 3], [4, 5, 6]])
    assert g.row_labels == ("0", "1")
    assert g.col_labels == ("0", "1", "2")
    assert g.shape == (2, 3)
    assert g.payoff_row.dtype == float
    np.testing.assert_array_equal(g.payoff_col, -np.array([[1, 2, 3], [4, 5, 6]]))
    with pytest.raises(ValueError):
        g.payoff_row[0, 0] = 99.0
    assert g.payoff_range == 5.0


def test_game_format_error_is_input_error():
    assert issubclass(GameFormatError, InputError)
    assert issubclass(GameFormatError, ValueError)


def test_huge_integer_payoff_is_a_format_error():
    with pytest.raises(GameFormatError):
        NormalFormGame.zero_sum([[10**400, 0]])


def test_zero_sum_detection():
    a = [[1.5, -2.0], [0.0, 3.25]]
    assert NormalFormGame.zero_sum(a).is_zero_sum
    assert NormalFormGame(a, [[-1.5, 2.0], [0.0, -3.25]]).is_zero_sum
    assert not NormalFormGame(a, [[-1.5, 2.0], [0.0, -3.0]]).is_zero_sum
    # Prisoner's dilemma is general-sum
    assert not NormalFormGame([[3, 0], [5, 1]], [[3, 5], [0, 1]]).is_zero_sum
    # all-zero game is zero-sum (0 == -0)
    assert NormalFormGame([[0.0]], [[0.0]]).is_zero_sum


def test_game_to_dict_zero_sum_stores_one_matrix():
    g = NormalFormGame.zero_sum([[1, 2], [3, 4]], row_labels=["U", "D"], name="g1")
    d = game_to_dict(g)
    assert d == {
        "name": "g1",
        "payoff_matrix": [[1.0, 2.0], [3.0, 4.0]],
        "row_labels": ["U", "D"],
        "col_labels": ["0", "1"],
    }
    g2 = NormalFormGame([[3, 0], [5, 1]], [[3, 5], [0, 1]])
    d2 = game_to_dict(g2)
    assert d2["payoff_col"] == [[3.0, 5.0], [0.0, 1.0]]
    assert "name" not in d2


def test_game_from_dict_variants():
    g = game_from_dict({"payoff_row": [[1, 2]], "payoff_col": [[0, 0]]})
    assert not g.is_zero_sum
    np.testing.assert_array_equal(g.payoff_col, [[0.0, 0.0]])
    with pytest.raises(GameFormatError, match="missing 'payoff_matrix'"):
        game_from_dict({"rows": [[1]]})
    with pytest.raises(GameFormatError, match="expected an object"):
        game_from_dict([[1]])
    with pytest.raises(GameFormatError) as exc:
        game_from_dict({"payoff_matrix": [[1, 2], [3]]}, where="here")
    assert str(exc.value).startswith("here: ")
    assert "ragged" in str(exc.value)


@pytest.mark.parametrize(
    "text, fragment",
    [
        ('{"payoff_matrix": [[1, NaN], [0, 1]]}', "NaN"),
        ('{"payoff_matrix": [[1, Infinity]]}', "Infinity"),
        ('[{"payoff_matrix": [[1, -Infinity]]}]', "Infinity"),
        ('{"payoff_matrix": [[1, 2], [3]]}', "ragged"),
        ('{"payoff_matrix": [[1, "two"], [3, 4]]}', "not a number"),
        ('{"payoff_matrix": [[1, true], [3, 4]]}', "not a number"),
        ("[]", "contains no games"),
        ('{"games": []}', "contains no games"),
        ('{"payoff_matrix": [[1, 2]', "invalid JSON"),
        ("", "invalid JSON"),
        ('{"payoff_matrix": []}', "zero rows"),
        ('{"payoff_matrix": [[1]], "payoff_col": [[1, 2]]}', "payoff_row is 1x1 but payoff_col is 1x2"),
        ('{"something": 1}', "missing 'payoff_matrix'"),
        ('[{"payoff_matrix": [[1]]}, 5]', "game 1"),
    ],
)
def test_load_games_errors_name_file_and_problem(tmp_path, text, fragment):
    p = _write(tmp_path, text)
    with pytest.raises(GameFormatError) as exc:
        load_games(p)
    msg = str(exc.value)
    assert str(p) in msg
    assert fragment in msg


def test_load_games_missing_file(tmp_path):
    p = tmp_path / "nope" / "missing.json"
    with pytest.raises(GameFormatError) as exc:
        load_games(p)
    assert str(p) in str(exc.value)
    assert "not found" in str(exc.value)


def test_load_games_not_utf8(tmp_path):
    p = tmp_path / "bin.json"
    p.write_bytes(b"\xff\xfe\x00garbage\x80")
    with pytest.raises(GameFormatError) as exc:
        load_games(p)
    assert str(p) in str(exc.value)


def test_load_games_huge_integer_literal(tmp_path):
    p = _write(tmp_path, '{"payoff_matrix": [[1' + "0" * 400 + ", 0]]}")
    with pytest.raises(GameFormatError):
        load_games(p)


def test_load_games_integer_over_digit_limit(tmp_path):
    p = _write(tmp_path, '{"payoff_matrix": [[1' + "0" * 5000 + ", 0]]}")
    with pytest.raises(GameFormatError):
        load_games(p)


def test_save_load_round_trip(tmp_path):
    games = [
        NormalFormGame.zero_sum([[0.1, -0.2], [1 / 3, 7.0]], row_labels=["U", "D"],
                                col_labels=["L", "R"], name="first"),
        NormalFormGame([[3, 0], [5, 1]], [[3, 5], [0, 1]], name="pd"),
        NormalFormGame.zero_sum(np.arange(12, dtype=float).reshape(3, 4) - 5.5),
        NormalFormGame.zero_sum([[42]]),
    ]
    p = tmp_path / "out.json"
    save_games(games, p)
    loaded = load_games(p)
    assert len(loaded) == len(games)
    for g, h in zip(games, loaded):
        assert g == h
        assert g.name == h.name
        assert g.is_zero_sum == h.is_zero_sum
        np.testing.assert_array_equal(g.payoff_row, h.payoff_row)
        np.testing.assert_array_equal(g.payoff_col, h.payoff_col)
    assert loaded[1].payoff_col.tolist() == [[3.0, 5.0], [0.0, 1.0]]
    # file is plain JSON (a list of objects)
    data = json.loads(p.read_text())
    assert isinstance(data, list) and data[0]["name"] == "first"


def test_load_single_object_and_games_key(tmp_path):
    p1 = _write(tmp_path, '{"payoff_matrix": [[1, -1], [-1, 1]]}', "one.json")
    (g,) = load_games(p1)
    assert g.is_zero_sum and g.shape == (2, 2)
    p2 = _write(tmp_path, '{"games": [{"payoff_matrix": [[1]]}, {"payoff_matrix": [[2, 3]]}]}',
                "wrapped.json")
    gs = load_games(p2)
    assert [h.shape for h in gs] == [(1, 1), (1, 2)]
    assert load_games(str(p2)) == gs  # str paths work too


def test_game_equality():
    a = NormalFormGame.zero_sum([[1, 2]])
    assert a == NormalFormGame.zero_sum([[1.0, 2.0]])
    assert a != NormalFormGame.zero_sum([[1, 3]])
    assert a != NormalFormGame.zero_sum([[1, 2]], col_labels=["x", "y"])
    assert a != NormalFormGame([[1, 2]], [[0, 0]])


# --------------------------------------------------------------------------------------------
# Hostile games files
# --------------------------------------------------------------------------------------------

def test_payoff_magnitude_limit():
    from stratbench.games.normal_form import MAX_PAYOFF

    assert MAX_PAYOFF == 1e12
    assert NormalFormGame.zero_sum([[1e12, -1e12]]).payoff_range == 2e12
    for x in (1e12 * 1.000001, -1e308, 1e308):
        with pytest.raises(GameFormatError) as exc:
            NormalFormGame.zero_sum([[0, x]])
        assert "payoff_matrix[0][1]" in str(exc.value) and "payoffs must lie within ±1e+12" in str(exc.value)
    with pytest.raises(GameFormatError, match=r"payoff_col\[0\]\[0\].*too large"):
        NormalFormGame([[0.0]], [[1e300]])


def test_oversized_matrix_is_refused_before_its_cells_are_read():
    rows = [[0.0]] * 2_000_000  # a million-row list: refused by its length, not cell by cell
    with pytest.raises(GameFormatError, match="2000000x1: each player may have at most 1000"):
        NormalFormGame.zero_sum(rows)


@pytest.mark.parametrize("game, fragment", [
    ({"payoff_matrix": [[1, 2]], "row_labels": [1]}, "game: row_labels[0]: expected a string, got 1"),
    ({"payoff_matrix": [[1, 2]], "col_labels": [{"a": 1}, "b"]}, "game: col_labels[0]: expected a string, got a table"),
    ({"payoff_matrix": [[1, 2]], "col_labels": ["a", "\ud800"]}, "game: col_labels[1]: not valid Unicode"),
    ({"payoff_matrix": [[1, 2]], "col_labels": "ab"}, "game: col_labels: expected a list, got 'ab'"),
    ({"payoff_matrix": [[1, 2]], "name": 5}, "game: name: expected a string, got 5"),
    ({"payoff_matrix": [[1, 2]], "name": None}, "game: name: expected a string, got null"),
])
def test_game_from_dict_refuses_labels_and_names_that_are_not_text(game, fragment):
    with pytest.raises(GameFormatError) as exc:
        game_from_dict(game)
    assert fragment in str(exc.value)


@pytest.mark.parametrize("text, fragment", [
    ('[{"payoff_matrix": [[1e308, 0]]}]', "game 0: payoff_matrix[0][0] = 1e+308 is too large"),
    ('[{"payoff_matrix": [[1e999, 0]]}]', "the number 1e999 is too large for a float"),
    ('[{"payoff_matrix": [[1, 0]], "row_labels": ["\\udc80"]}]', "[0].row_labels[0]: not valid Unicode"),
    ('[{"payoff_matrix": [[1, 0]], "payoff_matrix": [[2, 0]]}]', "duplicate key 'payoff_matrix'"),
    ("[" * 5000 + "]" * 5000, "nested deeper than 64 levels"),
    ('{"games": {"payoff_matrix": [[1]]}}', "'games' must be a list of game objects"),
    ('[{"payoff_matrix": [[1, 0]], "row_labels": [1]}]', "game 0: row_labels[0]: expected a string, got 1"),
])
def test_hostile_games_files(tmp_path, text, fragment):
    p = _write(tmp_path, text)
    with pytest.raises(GameFormatError) as exc:
        load_games(p, "--games-file")
    msg = str(exc.value)
    assert msg.startswith(f"--games-file {p}: ") and fragment in msg and "\n" not in msg


def test_load_games_refuses_directories_and_non_utf8(tmp_path):
    with pytest.raises(GameFormatError, match="is a directory"):
        load_games(tmp_path)
    p = tmp_path / "latin.json"
    p.write_bytes('[{"payoff_matrix": [[1]], "name": "café"}]'.encode("latin-1"))
    with pytest.raises(GameFormatError, match=r"not UTF-8 text \(byte 0xe9 at offset 38, line 1\)"):
        load_games(p)


_payoff = st.floats(-1e6, 1e6, allow_nan=False) | st.integers(-10**6, 10**6)


@st.composite
def _game_dicts(draw):
    m, n = draw(st.integers(1, 4)), draw(st.integers(1, 4))
    g = {"payoff_matrix": [[draw(_payoff) for _ in range(n)] for _ in range(m)]}
    if draw(st.booleans()):
        g["row_labels"] = draw(st.lists(st.text(min_size=1, max_size=5).filter(str.strip), min_size=m, max_size=m,
                                        unique=True))
    if draw(st.booleans()):
        g["payoff_col"] = [[draw(_payoff) for _ in range(n)] for _ in range(m)]
    if draw(st.booleans()):
        g["name"] = draw(st.text(max_size=10))
    return g


@given(st.lists(_game_dicts(), min_size=1, max_size=4))
@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_valid_games_files_load(tmp_path, games):
    p = _write(tmp_path, json.dumps(games))
    loaded = load_games(p)
    assert len(loaded) == len(games)
    for d, g in zip(games, loaded):
        np.testing.assert_array_equal(g.payoff_row, np.array(d["payoff_matrix"], dtype=float))
        assert g.name == d.get("name", "")
        assert g.row_labels == tuple(d.get("row_labels") or (str(i) for i in range(g.shape[0])))


_json_any = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda kids: st.lists(kids, max_size=4) | st.dictionaries(
        st.sampled_from(["payoff_matrix", "payoff_row", "payoff_col", "row_labels", "col_labels", "name", "games"])
        | st.text(max_size=4), kids, max_size=5),
    max_leaves=30,
)


@given(_json_any)
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_arbitrary_json_loads_or_raises_one_game_format_error(tmp_path, value):
    p = _write(tmp_path, json.dumps(value))  # NaN, Infinity and huge integers included
    try:
        load_games(p)
    except GameFormatError as e:
        assert "\n" not in str(e) and str(p) in str(e)
