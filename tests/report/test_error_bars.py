"""Error bars from CIs whose end equals the value up to the last bit: a bootstrap's mean is summed
in another order than the point estimate's, so a CI may sit one ulp inside its value (a player that
always answers 1/3). Such a bar has length 0, never a negative one (matplotlib refuses those: the
report of a suite folder crashed on it)."""

from __future__ import annotations

import numpy as np

from stratbench.report.scorecard import scorecard_plot
from stratbench.suites.nashgap.plots import position_bias_plot

PNG = b"\x89PNG"


def test_position_bias_with_a_ci_one_ulp_inside_its_value_draws():
    v = 1 / 3
    png = position_bias_plot([1, 2], [v, v], [[np.nextafter(v, 1), np.nextafter(v, 1)], [v, np.nextafter(v, 0)]],
                             [0.5, 0.5], "t")
    assert png.startswith(PNG)


def test_scorecard_bars_with_a_ci_one_ulp_inside_its_value_draw():
    v = 41.7
    card = {"budget": "smoke", "seed": 0, "suites": [{"suite": "nashgap", "title": "Nash gap"}, {"suite": "tom", "title": "ToM"}],
            "players": [{"player": "m", "role": "model"}],
            "cells": [{"player": "m", "suite": "nashgap", "normalized": v,
                       "normalized_ci95": [np.nextafter(v, 100), np.nextafter(v, 0)]},
                      {"player": "m", "suite": "tom", "normalized": None, "normalized_ci95": None}]}
    assert scorecard_plot(card).startswith(PNG)  # type: ignore[arg-type]
