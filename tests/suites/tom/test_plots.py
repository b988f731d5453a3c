"""The regret-curve figure (runs' regret_curve.png and the report's fallback from curves.json)."""

from __future__ import annotations

from stratbench.suites.tom.plots import regret_curves_plot

PNG = b"\x89PNG\r\n\x1a\n"


def test_regret_curves_plot_is_a_png_with_or_without_curves():
    one = regret_curves_plot({"rps/single_action (LM)": [0.5, 0.25, 0.0]}, "embedded: regret per step")
    assert one.startswith(PNG) and len(one) > 1000
    many = regret_curves_plot({f"setting {k} with a rather long name, longer than forty characters": [k, 0.1 * k]
                               for k in range(4)}, "$x$ " * 40, "regret")  # long labels, no mathtext
    assert many.startswith(PNG)
    assert regret_curves_plot({}, "nothing to draw").startswith(PNG)
    assert regret_curves_plot({"a": [1.0]}, "t") == regret_curves_plot({"a": [1.0]}, "t")  # deterministic bytes
