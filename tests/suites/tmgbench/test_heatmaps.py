"""TMGBench heat maps: files, sizes, exact quarter colours, sister symmetry, input validation."""

from __future__ import annotations

import copy
import math

import numpy as np
import pytest

pytest.importorskip("matplotlib")
from matplotlib.image import imread  # noqa: E402

from stratbench.suites.tmgbench.heatmaps import (  # noqa: E402
    DPI,
    FIGSIZE,
    REF,
    colormap_for,
    heatmap_values,
    plot_heatmap,
    plot_sister_symmetry,
    quarter_center,
    quarter_pixel_center,
    sister_difference,
    validate_grids,
    write_all_heatmaps,
)

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
H_PX, W_PX = round(FIGSIZE[1] * DPI), round(FIGSIZE[0] * DPI)
TOL = 0.025  # 8-bit PNG rounding plus one colormap lookup-table step

# Robinson–Goforth patterns and the TMGBench 12×12 layout (domain-facts notes), used to build a
# realistic standard answer: the pure-NE cells of each class.
_ALPHA = [[[1, 3], [2, 4]], [[2, 3], [1, 4]], [[3, 2], [1, 4]], [[3, 1], [2, 4]], [[2, 1], [3, 4]], [[1, 2], [3, 4]]]
_BETA = [[[2, 4], [1, 3]], [[1, 4], [2, 3]], [[1, 4], [3, 2]], [[2, 4], [3, 1]], [[3, 4], [2, 1]], [[3, 4], [1, 2]]]
_GAMMA = [[[4, 3], [2, 1]], [[4, 3], [1, 2]], [[4, 2], [1, 3]], [[4, 1], [2, 3]], [[4, 1], [3, 2]], [[4, 2], [3, 1]]]
_DELTA = [[[3, 4], [1, 2]], [[3, 4], [2, 1]], [[2, 4], [3, 1]], [[1, 4], [3, 2]], [[1, 4], [2, 3]], [[2, 4], [1, 3]]]
_ROWS = [_ALPHA[k] for k in (1, 2, 3, 4, 5, 0)] + [_BETA[k] for k in (1, 2, 3, 4, 5, 0)]
_COLS = [_DELTA[k] for k in (0, 5, 4, 3, 2, 1)] + [_GAMMA[k] for k in (0, 5, 4, 3, 2, 1)]


def _pure_ne(row: int, col: int) -> list[int]:
    a, b = np.array(_ROWS[row - 1]), np.array(_COLS[col - 1])
    return [int(a[r, c] > a[1 - r, c] and b[r, c] > b[r, 1 - c]) for r in (0, 1) for c in (0, 1)]


def oracle_grids() -> list[dict]:
    """freq = std: a model that always gives exactly the standard answer."""
    out = []
    for i in range(1, 13):
        for j in range(1, 13):
            std = _pure_ne(i, j)
            out.append({"id": f"{i}-{j}", "row": i, "col": j, "std": std, "freq": [float(s) for s in std]})
    return out


def random_grids(seed: int = 7) -> list[dict]:
    rng = np.random.default_rng(seed)
    grids = oracle_grids()
    for g in grids:
        g["freq"] = [float(x) for x in rng.uniform(0.0, 1.0, 4)]
    return grids


def _find(grids: list[dict], row: int, col: int) -> dict:
    return next(g for g in grids if g["row"] == row and g["col"] == col)


def _pixel(img: np.ndarray, row: int, col: int, o: int) -> np.ndarray:
    px, py = quarter_pixel_center(row, col, o)
    return img[int(py), int(px), :3]


def _colour(kind: str, value: float) -> np.ndarray:
    cmap, norm = colormap_for(kind)
    return np.asarray(cmap(norm(value))[:3])


def _all_quarters():
    return [(i, j, o) for i in range(1, 13) for j in range(1, 13) for o in range(1, 5)]


# ---------------------------------------------------------------------------------------------


def test_topology_fixture_is_the_rg_topology():
    counts = {0: 0, 1: 0, 2: 0}
    for g in oracle_grids():
        counts[sum(g["std"])] += 1
    assert counts == {0: 18, 1: 108, 2: 18}
    # Prisoner's Dilemma: A1/B2 cooperate in the canonical orientation, so mutual defection is A2B1.
    assert _find(oracle_grids(), 6, 7)["std"] == [0, 0, 1, 0]


def test_quarter_center_layout():
    assert quarter_center(1, 1, 1) == (0.5, 0.5)
    assert quarter_center(1, 1, 2) == (1.5, 0.5)  # A1B2 upper-right
    assert quarter_center(1, 1, 3) == (0.5, 1.5)  # A2B1 lower-left
    assert quarter_center(1, 1, 4) == (1.5, 1.5)
    assert quarter_center(12, 12, 2) == (23.5, 22.5)
    assert quarter_center(3, 10, 4) == (19.5, 5.5)
    # The geometric mirror across the counter-diagonal of quarter o is ref(o) of the sister cell.
    for i, j, o in _all_quarters():
        x, y = quarter_center(i, j, o)
        assert quarter_center(13 - j, 13 - i, REF[o]) == (24 - y, 24 - x)
    for bad in [(0, 1, 1), (13, 1, 1), (1, 1, 0), (1, 1, 5), (1.0, 1, 1)]:
        with pytest.raises(ValueError):
            quarter_center(*bad)


def test_write_all_heatmaps_writes_four_pngs(tmp_path):
    paths = write_all_heatmaps(random_grids(), tmp_path / "maps", prefix="m_")
    assert set(paths) == {"standard", "practical", "inconsistency", "sister_symmetry"}
    for name, path in paths.items():
        assert path.exists() and path.name == f"m_{name}_heatmap.png"
        assert path.read_bytes()[:8] == PNG_SIGNATURE
        img = imread(path)
        assert img.shape[:2] == (H_PX, W_PX)


def test_output_is_deterministic(tmp_path):
    a = plot_heatmap(random_grids(), "practical", tmp_path / "a.png")
    b = plot_heatmap(random_grids(), "practical", tmp_path / "b.png")
    assert a.read_bytes() == b.read_bytes()


def test_oracle_inconsistency_is_all_white(tmp_path):
    grids = oracle_grids()
    assert np.all(heatmap_values(grids, "inconsistency") == 0.0)
    img = imread(plot_heatmap(grids, "inconsistency", tmp_path / "inc.png"))
    zero = _colour("inconsistency", 0.0)
    assert np.allclose(zero, 1.0)  # white at 0, as asked
    for i, j, o in _all_quarters():
        assert np.allclose(_pixel(img, i, j, o), zero, atol=TOL), (i, j, o)


def test_wrong_quarters_show_sign_colours_at_their_position(tmp_path):
    grids = oracle_grids()
    # (2, 5) is a 0-NE cell: choosing A2B1 there is an over-choice -> blue.
    _find(grids, 2, 5)["freq"][2] = 1.0
    # Prisoner's Dilemma (6, 7): missing its NE A2B1 -> red.
    _find(grids, 6, 7)["freq"][2] = 0.0
    # Half-wrong elsewhere -> half-depth blue.
    assert _find(grids, 11, 1)["std"][0] == 0
    _find(grids, 11, 1)["freq"][0] = 0.5
    img = imread(plot_heatmap(grids, "inconsistency", tmp_path / "inc.png", title="wrong"))
    blue, red, half = _colour("inconsistency", 1.0), _colour("inconsistency", -1.0), _colour("inconsistency", 0.5)
    assert blue[2] > blue[0] and red[0] > red[2]  # blue positive, red negative
    assert np.allclose(_pixel(img, 2, 5, 3), blue, atol=TOL)
    assert np.allclose(_pixel(img, 6, 7, 3), red, atol=TOL)
    assert np.allclose(_pixel(img, 11, 1, 1), half, atol=TOL)
    changed = {(2, 5, 3), (6, 7, 3), (11, 1, 1)}
    zero = _colour("inconsistency", 0.0)
    for q in _all_quarters():
        if q not in changed:
            assert np.allclose(_pixel(img, *q), zero, atol=TOL), q


@pytest.mark.parametrize("kind", ["standard", "practical"])
def test_every_quarter_has_its_value_colour(tmp_path, kind):
    grids = random_grids(3)
    img = imread(plot_heatmap(grids, kind, tmp_path / f"{kind}.png", zero_task_boxes=False))
    for g in grids:
        for o in range(1, 5):
            value = g["std" if kind == "standard" else "freq"][o - 1]
            got = _pixel(img, g["row"], g["col"], o)
            assert np.allclose(got, _colour(kind, value), atol=TOL), (g["row"], g["col"], o, value)


def test_sister_difference_values():
    grids = random_grids(11)
    diff = sister_difference(grids)
    _, freq = validate_grids(grids)
    for i, j, o in _all_quarters():
        x, y = quarter_center(i, j, o)
        expected = freq[i - 1, j - 1, o - 1] - freq[12 - j, 12 - i, REF[o] - 1]
        assert diff[int(y), int(x)] == pytest.approx(expected)
    # Anti-symmetric across the counter-diagonal, zero on self-mirrored quarters.
    assert np.allclose(diff, -diff[::-1, ::-1].T)
    # The standard answers of the real topology are exactly axisymmetric.
    assert np.all(sister_difference(oracle_grids()) == 0.0)


def test_sister_symmetry_image(tmp_path):
    grids = oracle_grids()
    assert _find(grids, 2, 5)["std"] == [0, 0, 0, 0]
    _find(grids, 2, 5)["freq"][1] = 0.8  # A1B2 of (2, 5); sister is (8, 11), quarter ref(2) = 2
    img = imread(plot_sister_symmetry(grids, tmp_path / "sis.png"))
    assert img.shape[:2] == (H_PX, W_PX)
    assert np.allclose(_pixel(img, 2, 5, 2), _colour("sister", 0.8), atol=TOL)
    assert np.allclose(_pixel(img, 8, 11, 2), _colour("sister", -0.8), atol=TOL)
    zero = _colour("sister", 0.0)
    for q in [(2, 5, 1), (2, 5, 4), (8, 11, 1), (6, 7, 4), (1, 1, 1), (12, 12, 4)]:
        assert np.allclose(_pixel(img, *q), zero, atol=TOL), q


def _bad(mutate):
    grids = oracle_grids()
    mutate(grids)
    return grids


BAD_INPUTS = {
    "too few": lambda g: g.pop(),
    "duplicate": lambda g: g[1].update(row=g[0]["row"], col=g[0]["col"]),
    "row 0": lambda g: g[0].update(row=0),
    "col 13": lambda g: g[0].update(col=13),
    "row str": lambda g: g[0].update(row="1"),
    "row bool": lambda g: g[0].update(row=True),
    "row float": lambda g: g[0].update(row=1.0),
    "freq len 3": lambda g: g[0].update(freq=[0.0, 0.0, 0.0]),
    "freq > 1": lambda g: g[0].update(freq=[0.0, 1.2, 0.0, 0.0]),
    "freq < 0": lambda g: g[0].update(freq=[0.0, -0.1, 0.0, 0.0]),
    "freq nan": lambda g: g[0].update(freq=[0.0, math.nan, 0.0, 0.0]),
    "freq str": lambda g: g[0].update(freq="0.1"),
    "freq item str": lambda g: g[0].update(freq=[0.0, "0.5", 0.0, 0.0]),
    "std 0.5": lambda g: g[0].update(std=[0.5, 0, 0, 0]),
    "std len 5": lambda g: g[0].update(std=[0, 0, 0, 0, 0]),
    "missing freq": lambda g: g[0].pop("freq"),
    "not a dict": lambda g: g.__setitem__(0, [1, 1]),
}


@pytest.mark.parametrize("name", sorted(BAD_INPUTS))
def test_invalid_grids_raise_value_error(tmp_path, name):
    grids = _bad(BAD_INPUTS[name])
    with pytest.raises(ValueError):
        validate_grids(grids)
    with pytest.raises(ValueError):
        write_all_heatmaps(grids, tmp_path / "out")
    assert not (tmp_path / "out").exists()  # validated before anything is written


def test_invalid_container_and_kind(tmp_path):
    with pytest.raises(ValueError, match="144"):
        validate_grids({"row": 1})
    with pytest.raises(ValueError, match="kind"):
        plot_heatmap(oracle_grids(), "bias", tmp_path / "x.png")
    assert not (tmp_path / "x.png").exists()


def test_numpy_inputs_accepted():
    grids = copy.deepcopy(random_grids())
    for g in grids:
        g["row"], g["col"] = np.int64(g["row"]), np.int64(g["col"])
        g["freq"] = np.asarray(g["freq"])
    std, freq = validate_grids(grids)
    assert std.shape == freq.shape == (12, 12, 4)
