"""TMGBench heat maps: standard, practical, inconsistency and sister-symmetry views.

TMGBench (Wang et al.) places the 144 Robinson–Goforth classes of strictly ordinal 2×2 games on a
12×12 grid and splits every grid cell into four quarter cells, one per outcome
o = 1..4 = A1B1 (upper-left), A1B2 (upper-right), A2B1 (lower-left), A2B2 (lower-right).
Colouring the quarters gives the paper's three maps:

* *standard* heat map: colour depth = 1 where the outcome is in the standard answer (a pure NE);
* *practical* heat map: colour depth = Freq_{i,j,o}, the share of the model's answers holding o;
* *inconsistency* heat map: practical − standard, blue where the model over-selects an outcome
  and red where it misses one (paper, Figure 3), on symmetric limits [−1, 1] with white at 0.

A fourth view, *sister symmetry*, shows Freq(i,j,o) − Freq(13−j, 13−i, ref(o)) with
ref = {1→4, 2→2, 3→3, 4→1}: the role-swapped sister game lies at the mirror position across the
counter-diagonal, and the quarter map is laid out so that the mirror of quarter o is exactly the
quarter ref(o) of the sister cell. A role-consistent model gives an all-white map; the paper's
bias degree (BD) is the mean square of this map.

Layout (shared by every map so that images are comparable and tests can locate pixels): data
coordinates run over quarter cells, x = 0..24 left to right, y = 0..24 top to bottom (row 1 at the
top). The axes occupy the fixed figure rectangle :data:`AXES_RECT`; nothing is placed with a tight
bounding box, so the pixel position of every quarter is known in advance
(:func:`quarter_pixel_center`). The two 0-NE ("0-task") blocks are outlined in yellow
(rows 1–3 × cols 4–6) and green (rows 7–9 × cols 10–12), as in the paper's Figure 7.

matplotlib is an optional dependency; it is imported only when a plot is drawn, always through the
Agg canvas (no display, no pyplot global state), and PNGs are written without a Software tag so
the bytes depend only on the data and the matplotlib version.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from stratbench.errors import InputError
from stratbench.render.figures import RC, figure, png
from stratbench.runner.jsonl import write_bytes_atomic

if TYPE_CHECKING:  # pragma: no cover - typing only
    from matplotlib.colors import Colormap, Normalize

__all__ = [
    "AXES_RECT",
    "DPI",
    "FIGSIZE",
    "GREEN_BLOCK",
    "KINDS",
    "REF",
    "YELLOW_BLOCK",
    "HeatmapKind",
    "colormap_for",
    "heatmap_values",
    "plot_heatmap",
    "plot_sister_symmetry",
    "quarter_center",
    "quarter_pixel_center",
    "sister_difference",
    "validate_grids",
    "write_all_heatmaps",
]

HeatmapKind = Literal["standard", "practical", "inconsistency"]
KINDS: tuple[str, ...] = ("standard", "practical", "inconsistency")

N = 12  # grid cells per side
Q = 2 * N  # quarter cells per side

#: Reflection of the outcome index across the counter-diagonal (paper: {1,2,3,4} -> {4,2,3,1}).
REF: dict[int, int] = {1: 4, 2: 2, 3: 3, 4: 1}

#: 0-NE blocks as (first row, last row, first col, last col), 1-based inclusive.
YELLOW_BLOCK: tuple[int, int, int, int] = (1, 3, 4, 6)
GREEN_BLOCK: tuple[int, int, int, int] = (7, 9, 10, 12)

FIGSIZE: tuple[float, float] = (7.0, 7.0)  # inches; square so quarters are square in pixels
DPI: int = 120
#: Heat-map axes in figure fractions (left, bottom, width, height): fixed, never "tight".
AXES_RECT: tuple[float, float, float, float] = (0.085, 0.075, 0.78, 0.78)
#: Colour-bar axes in figure fractions.
CBAR_RECT: tuple[float, float, float, float] = (0.88, 0.075, 0.025, 0.78)

_SEQ_COLORS = ("#ffffff", "#c6dbef", "#6baed6", "#2171b5", "#08306b")  # white -> deep blue
_DIV_COLORS = ("#67001f", "#d6604d", "#ffffff", "#4393c3", "#053061")  # red -> white -> blue
_LUT = 257  # odd size: the middle entry sits exactly at 0.5, so 0 maps to pure white

_TITLES = {
    "standard": "TMGBench standard heat map",
    "practical": "TMGBench practical heat map",
    "inconsistency": "TMGBench inconsistency heat map: practical − standard\n"
    "(blue: chosen beyond the standard answer, red: standard outcome missed)",
    "sister": "TMGBench sister symmetry: Freq(i, j, o) − Freq(13−j, 13−i, ref(o))\n"
    "(white: same answer as the role-swapped sister game)",
}
_CBAR_LABELS = {
    "standard": "in standard answer (pure NE)",
    "practical": "Freq",
    "inconsistency": "Freq − standard",
    "sister": "Freq − sister Freq",
}


# --------------------------------------------------------------------------------------------
# Geometry
# --------------------------------------------------------------------------------------------


def _check_position(row: int, col: int, o: int) -> None:
    """Reject positions outside the grid early: a silent off-grid coordinate would mislead."""
    for name, value, hi in (("row", row, N), ("col", col, N), ("o", o, 4)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or not 1 <= value <= hi:
            raise InputError(f"{name} must be an integer in 1..{hi}, got {value!r}")


def _quarter_index(row: int, col: int, o: int) -> tuple[int, int]:
    """(quarter row, quarter column), 0-based, of outcome o of grid (row, col).

    o = 1, 2 are the top quarters (A1), o = 3, 4 the bottom ones (A2); o = 1, 3 the left (B1),
    o = 2, 4 the right (B2) — the usual payoff-matrix orientation.
    """
    return 2 * (row - 1) + (0 if o in (1, 2) else 1), 2 * (col - 1) + (0 if o in (1, 3) else 1)


def quarter_center(row: int, col: int, o: int) -> tuple[float, float]:
    """Centre (x, y) of quarter o of grid (row, col) in data coordinates.

    x grows to the right (columns), y grows downwards (rows), both in quarter-cell units 0..24,
    so the centre is never on a drawn line; tests map it to pixels with the fixed layout.
    """
    _check_position(row, col, o)
    qr, qc = _quarter_index(row, col, o)
    return qc + 0.5, qr + 0.5


def quarter_pixel_center(
    row: int, col: int, o: int, *, dpi: float = DPI, figsize: tuple[float, float] = FIGSIZE
) -> tuple[float, float]:
    """Centre of quarter o of grid (row, col) in image pixels (x from the left, y from the top).

    Exists because the axes are pinned to :data:`AXES_RECT`: the position of a quarter in the
    saved PNG is fixed, so a test (or a reader of the image) can sample an exact quarter.
    Use ``int()`` of each coordinate to index an image array ``img[y, x]``.
    """
    x, y = quarter_center(row, col, o)
    left, bottom, width, height = AXES_RECT
    w_px, h_px = figsize[0] * dpi, figsize[1] * dpi
    px = (left + width * x / Q) * w_px
    py = (1.0 - (bottom + height) + height * y / Q) * h_px  # y = 0 is the top edge of the axes
    return px, py


# --------------------------------------------------------------------------------------------
# Input
# --------------------------------------------------------------------------------------------


def _as_vector(value: Any, name: str, where: str) -> np.ndarray:
    """Four finite numbers in [0, 1]; anything else is a bug upstream and must not be drawn."""
    if isinstance(value, (str, bytes)) or not isinstance(value, (Sequence, np.ndarray)):
        raise InputError(f"{where}: {name} must be a sequence of 4 numbers, got {type(value).__name__}")
    if len(value) != 4:
        raise InputError(f"{where}: {name} must have length 4 (one per outcome), got {len(value)}")
    out = np.empty(4, dtype=float)
    for k, v in enumerate(value):
        if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)):
            raise InputError(f"{where}: {name}[{k}] must be a number, got {v!r}")
        f = float(v)
        if not math.isfinite(f) or not 0.0 <= f <= 1.0:
            raise InputError(f"{where}: {name}[{k}] must lie in [0, 1], got {v!r}")
        out[k] = f
    return out


def validate_grids(grids: Sequence[Mapping[str, Any]]) -> tuple[np.ndarray, np.ndarray]:
    """Check the per-grid records and return (std, freq) arrays of shape (12, 12, 4).

    Index [row − 1, col − 1, o − 1]. Every map needs the full grid: a missing or duplicated cell
    would leave a blank (read as "0") or silently overwrite a value, so both raise. std must be
    0 or 1 because the standard heat map marks set membership, not a share.
    """
    if isinstance(grids, Mapping) or not isinstance(grids, Sequence):
        raise InputError("grids must be a list of 144 per-grid dicts")
    if len(grids) != N * N:
        raise InputError(f"expected {N * N} grids (one per 12×12 cell), got {len(grids)}")
    std = np.full((N, N, 4), np.nan)
    freq = np.full((N, N, 4), np.nan)
    seen: dict[tuple[int, int], int] = {}
    for idx, g in enumerate(grids):
        if not isinstance(g, Mapping):
            raise InputError(f"grid #{idx}: expected a dict, got {type(g).__name__}")
        where = f"grid #{idx} (id {g.get('id', '?')})"
        for needed in ("row", "col", "std", "freq"):
            if needed not in g:
                raise InputError(f"{where}: missing key {needed!r}")
        row, col = g["row"], g["col"]
        for name, value in (("row", row), ("col", col)):
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or not 1 <= value <= N:
                raise InputError(f"{where}: {name} must be an integer in 1..{N}, got {value!r}")
        key = (int(row), int(col))
        if key in seen:
            raise InputError(f"{where}: duplicate cell (row {row}, col {col}), also grid #{seen[key]}")
        seen[key] = idx
        s = _as_vector(g["std"], "std", where)
        if not np.all((s == 0.0) | (s == 1.0)):
            raise InputError(f"{where}: std entries must be 0 or 1, got {list(g['std'])!r}")
        std[key[0] - 1, key[1] - 1] = s
        freq[key[0] - 1, key[1] - 1] = _as_vector(g["freq"], "freq", where)
    # 144 distinct in-range cells cover the grid, so no NaN remains.
    return std, freq


def _to_quarters(cube: np.ndarray) -> np.ndarray:
    """(12, 12, 4) per-outcome values -> (24, 24) image indexed [quarter row, quarter col]."""
    img = np.empty((Q, Q), dtype=float)
    img[0::2, 0::2] = cube[:, :, 0]  # A1B1 upper-left
    img[0::2, 1::2] = cube[:, :, 1]  # A1B2 upper-right
    img[1::2, 0::2] = cube[:, :, 2]  # A2B1 lower-left
    img[1::2, 1::2] = cube[:, :, 3]  # A2B2 lower-right
    return img


def heatmap_values(grids: Sequence[Mapping[str, Any]], kind: str) -> np.ndarray:
    """The (24, 24) quarter-cell values drawn for a heat map of the given kind.

    Kept separate from drawing so that numbers can be checked (and reused) without matplotlib.
    """
    if kind not in KINDS:
        raise InputError(f"kind must be one of {', '.join(KINDS)}, got {kind!r}")
    std, freq = validate_grids(grids)
    cube = {"standard": std, "practical": freq, "inconsistency": freq - std}[kind]
    return _to_quarters(cube)


def sister_difference(grids: Sequence[Mapping[str, Any]]) -> np.ndarray:
    """(24, 24) image of Freq(i,j,o) − Freq(13−j, 13−i, ref(o)).

    The sister cell is the role-swapped game; its mirrored outcome is ref(o). The image is
    anti-symmetric across the counter-diagonal, and its mean square is the paper's BD.
    """
    _, freq = validate_grids(grids)
    # sister[i, j, o] = freq[11 - j, 11 - i, ref(o)] with 0-based i, j, o.
    ref0 = [REF[o] - 1 for o in range(1, 5)]
    sister = freq.transpose(1, 0, 2)[::-1, ::-1][:, :, ref0]
    return _to_quarters(freq - sister)


# --------------------------------------------------------------------------------------------
# Drawing
# --------------------------------------------------------------------------------------------


def _mpl() -> Any:
    """Import matplotlib lazily: it is optional, and the rest of stratbench must import without it."""
    try:
        import matplotlib
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise InputError("heat maps need matplotlib: pip install matplotlib") from exc
    return matplotlib


def colormap_for(kind: str) -> tuple[Colormap, Normalize]:
    """Colormap and normalisation used for a map kind ("standard", "practical", "inconsistency",
    "sister"), exposed so tests and legends can look up the exact colour of a value.

    Sequential white→blue on [0, 1] for the standard and practical maps (white = never chosen);
    diverging red→white→blue on [−1, 1] for difference maps, with an odd-sized lookup table so
    that 0 is exactly white.
    """
    _mpl()
    from matplotlib.colors import LinearSegmentedColormap, Normalize

    if kind in ("standard", "practical"):
        return LinearSegmentedColormap.from_list("tmg_seq", _SEQ_COLORS, N=_LUT), Normalize(0.0, 1.0)
    if kind in ("inconsistency", "sister"):
        return LinearSegmentedColormap.from_list("tmg_div", _DIV_COLORS, N=_LUT), Normalize(-1.0, 1.0)
    raise InputError(f"unknown heat-map kind {kind!r}")


def _draw(
    img: np.ndarray,
    kind: str,
    path: str | Path,
    title: str,
    *,
    zero_task_boxes: bool,
    counter_diagonal: bool,
    dpi: float,
) -> Path:
    """Draw one quarter-cell map on the fixed layout and save it as PNG."""
    mpl = _mpl()
    from matplotlib.patches import Rectangle

    cmap, norm = colormap_for(kind)
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    rc = {
        **RC,  # the shared look (DejaVu Sans, 9 pt, white, no mathtext), then the heat map's own
        "axes.spines.top": True,  # the map is framed on all four sides
        "axes.spines.right": True,
        "savefig.edgecolor": "white",
        "savefig.transparent": False,
        "savefig.dpi": dpi,  # `png` saves at the figure's own resolution
        "axes.linewidth": 2.2,
        "image.interpolation": "nearest",
    }
    with mpl.rc_context(rc):
        fig = figure(*FIGSIZE)
        fig.set_dpi(dpi)
        ax = fig.add_axes(AXES_RECT)
        ax.imshow(
            img, cmap=cmap, norm=norm, extent=(0, Q, Q, 0), origin="upper",
            interpolation="nearest", aspect="auto", zorder=0,
        )
        ax.set_xlim(0, Q)
        ax.set_ylim(Q, 0)  # row 1 at the top

        # Thin lines between quarters, thicker between grid cells, thickest between quadrants.
        quarter_lines = [k for k in range(1, Q) if k % 2]
        cell_lines = [k for k in range(2, Q, 2) if k != N]
        ax.vlines(quarter_lines, 0, Q, colors="#bdbdbd", linewidths=0.4, zorder=2)
        ax.hlines(quarter_lines, 0, Q, colors="#bdbdbd", linewidths=0.4, zorder=2)
        ax.vlines(cell_lines, 0, Q, colors="#525252", linewidths=1.0, zorder=3)
        ax.hlines(cell_lines, 0, Q, colors="#525252", linewidths=1.0, zorder=3)
        ax.vlines([N], 0, Q, colors="black", linewidths=2.2, zorder=4)
        ax.hlines([N], 0, Q, colors="black", linewidths=2.2, zorder=4)

        if counter_diagonal:
            ax.plot([0, Q], [Q, 0], color="#333333", linewidth=1.2, linestyle="--", zorder=5)
        if zero_task_boxes:
            inset = 0.12  # keep the box visible next to the black quadrant line it borders
            for (r0, r1, c0, c1), colour in ((YELLOW_BLOCK, "#f5c400"), (GREEN_BLOCK, "#1a9e3a")):
                x0, y0 = 2 * (c0 - 1) + inset, 2 * (r0 - 1) + inset
                w, h = 2 * (c1 - c0 + 1) - 2 * inset, 2 * (r1 - r0 + 1) - 2 * inset
                ax.add_patch(Rectangle((x0, y0), w, h, fill=False, edgecolor=colour,
                                       linewidth=2.6, zorder=6))

        centres = [2 * k + 1 for k in range(N)]
        labels = [str(k + 1) for k in range(N)]
        ax.set_xticks(centres, labels)
        ax.set_yticks(centres, labels)
        ax.tick_params(length=0, pad=4)
        ax.set_xlabel("column j (B's pattern)")
        ax.set_ylabel("row i (A's pattern)")
        ax.set_title(title, pad=10)

        cax = fig.add_axes(CBAR_RECT)
        from matplotlib.cm import ScalarMappable

        cb = fig.colorbar(ScalarMappable(norm=norm, cmap=cmap), cax=cax)
        cb.set_label(_CBAR_LABELS[kind])
        cb.outline.set_linewidth(0.8)

        write_bytes_atomic(out, png(fig))
    return out


def plot_heatmap(
    grids: Sequence[Mapping[str, Any]],
    kind: HeatmapKind | str,
    path: str | Path,
    title: str | None = None,
    *,
    zero_task_boxes: bool = True,
    counter_diagonal: bool = False,
    dpi: float = DPI,
) -> Path:
    """Draw the standard, practical or inconsistency heat map of the 144 grids to a PNG.

    kind: "standard" (colour = std), "practical" (colour = freq) or "inconsistency"
    (freq − std: blue = chosen more than the standard answer, red = missed, white = agrees).
    The 0-task blocks are outlined (yellow/green) because the paper reads model bias off them;
    ``counter_diagonal`` adds the symmetry axis as a dashed line. Returns the written path.
    Raises InputError (a ValueError) on malformed grids or an unknown kind.
    """
    img = heatmap_values(grids, kind)
    return _draw(img, kind, path, title if title is not None else _TITLES[kind],
                 zero_task_boxes=zero_task_boxes, counter_diagonal=counter_diagonal, dpi=dpi)


def plot_sister_symmetry(
    grids: Sequence[Mapping[str, Any]],
    path: str | Path,
    title: str | None = None,
    *,
    zero_task_boxes: bool = True,
    dpi: float = DPI,
) -> Path:
    """Draw Freq(i,j,o) − Freq(13−j, 13−i, ref(o)) with the counter-diagonal, to a PNG.

    Shows where a model treats a game differently from its role-swapped sister (the paper's
    quasi-axisymmetry, Figure 4): the image is anti-symmetric across the dashed counter-diagonal,
    so every deviation appears twice, in opposite colours, at mirror positions.
    """
    img = sister_difference(grids)
    return _draw(img, "sister", path, title if title is not None else _TITLES["sister"],
                 zero_task_boxes=zero_task_boxes, counter_diagonal=True, dpi=dpi)


def write_all_heatmaps(
    grids: Sequence[Mapping[str, Any]], out_dir: str | Path, prefix: str = ""
) -> dict[str, Path]:
    """Write the four maps into out_dir as ``{prefix}{name}_heatmap.png``.

    Returns {"standard", "practical", "inconsistency", "sister_symmetry"} -> path. The input is
    validated once up front so a bad record fails before any file is written.
    """
    validate_grids(grids)
    out = Path(out_dir)
    written: dict[str, Path] = {}
    for kind in KINDS:
        written[kind] = plot_heatmap(grids, kind, out / f"{prefix}{kind}_heatmap.png")
    written["sister_symmetry"] = plot_sister_symmetry(
        grids, out / f"{prefix}sister_symmetry_heatmap.png"
    )
    return written
