"""Tests for stratbench.suites.tmgbench.metrics: PAR, ID, BD, sub-metrics, AntiID/AntiBD, SD.

Expected values are worked out by hand in the comments from the 18/108/18 split of 0/1/2-NE games,
not from the module's own helpers.
"""

from __future__ import annotations

import itertools
import math

import pytest

from stratbench.suites.tmgbench.answers import parse_answer_set
from stratbench.suites.tmgbench.games import all_games, game_at, standard_answer
from stratbench.suites.tmgbench.metrics import (
    TMGBenchMetrics,
    metrics_from_distributions,
    metrics_from_samples,
    samples_to_distribution,
    summary_keys,
)

GAMES = all_games()
ALL_SUBSETS = [frozenset(c) for k in range(5) for c in itertools.combinations([1, 2, 3, 4], k)]


def approx(x: float) -> object:
    return pytest.approx(x, abs=1e-9)


def oracle_samples(t: int = 1) -> dict[str, list[frozenset[int]]]:
    return {g.id: [standard_answer(g)] * t for g in GAMES}


def assert_same_summary(a: TMGBenchMetrics, b: TMGBenchMetrics) -> None:
    sa, sb = summary_keys(a), summary_keys(b)
    assert set(sa) == set(sb)
    for k in sa:
        x, y = sa[k], sb[k]
        if isinstance(x, list) or x is None:
            assert (x is None) == (y is None), k
            if x is not None:
                assert x == pytest.approx(y, abs=1e-9), k
        else:
            assert x == pytest.approx(y, abs=1e-9), k


def with_overrides(overrides: dict[tuple[int, int], list]) -> dict[tuple[int, int], list]:
    base = {g.position: [standard_answer(g)] for g in GAMES}
    base.update(overrides)
    return base


# --------------------------------------------------------------------------------------------
# Reference answerers


def test_oracle_is_perfect() -> None:
    m = metrics_from_samples(oracle_samples(3))
    assert m.par_pct == approx(100) and m.id_pct == approx(0) and m.bd_pct == approx(0)
    for n in (0, 1, 2):
        assert m.par_by_n_pct[n] == approx(100)
        assert m.id_by_n_pct[n] == approx(0) and m.bd_by_n_pct[n] == approx(0)
        assert m.anti_id_by_n_pct[n] == approx(100) and m.anti_bd_by_n_pct[n] == approx(100)
    assert m.anti_id_pct == approx(100) and m.anti_bd_pct == approx(100)
    assert m.sd_pct == approx(0)
    assert m.parse_failure_rate == 0
    assert m.par_pct_ci95 == [100.0, 100.0] and m.id_pct_ci95 == [0.0, 0.0]
    assert m.n_grids == 144 and m.n_grids_by_n == {0: 18, 1: 108, 2: 18}


def test_always_empty() -> None:
    m = metrics_from_samples({g.id: [frozenset()] for g in GAMES})
    # PAR: only the 18 no-equilibrium grids are right: 18/144.
    assert m.par_pct == approx(12.5)
    assert m.par_by_n_pct == {0: approx(100), 1: approx(0), 2: approx(0)}
    # ID: Freq = 0 everywhere, so a grid contributes |std|/4: 0, 1/4, 2/4 for n = 0, 1, 2.
    # Overall (18·0 + 108·1/4 + 18·2/4)/144 = (27 + 9)/144 = 1/4.
    assert m.id_pct == approx(25)
    assert m.id_by_n_pct == {0: approx(0), 1: approx(25), 2: approx(50)}
    # BD: Freq is 0 on both sides of every pair.
    assert m.bd_pct == approx(0) and all(v == approx(0) for v in m.bd_by_n_pct.values())
    # AntiID = 1 − √(1/4) = 1/2; per n: 1, 1/2, 1 − √(1/2).
    assert m.anti_id_pct == approx(50)
    assert m.anti_id_by_n_pct[2] == approx(100 * (1 - math.sqrt(0.5)))
    assert m.anti_bd_pct == approx(100)
    assert m.sd_pct == approx(0)


def test_always_all_four_cells() -> None:
    m = metrics_from_samples({g.id: [frozenset({1, 2, 3, 4})] for g in GAMES})
    # Each grid: (4 − |std|)/4; overall (18·4 + 108·3 + 18·2)/(4·144) = 432/576 = 3/4.
    assert m.par_pct == approx(0)
    assert m.id_pct == approx(75)
    assert m.id_by_n_pct == {0: approx(100), 1: approx(75), 2: approx(50)}
    assert m.bd_pct == approx(0) and m.sd_pct == approx(0)


def test_uniform_over_the_16_subsets() -> None:
    uniform = {s: 1 / 16 for s in ALL_SUBSETS}
    m = metrics_from_distributions({g.id: uniform for g in GAMES})
    # Every Freq is 1/2, so every ID term is 1/4 whatever the standard set; PAR is 1/16.
    assert m.par_pct == approx(6.25) and m.id_pct == approx(25) and m.bd_pct == approx(0)


def test_distribution_on_the_standard_set_equals_the_oracle() -> None:
    dist = metrics_from_distributions({g.position: {standard_answer(g): 1.0} for g in GAMES})
    orc = metrics_from_samples(oracle_samples())
    assert_same_summary(dist, orc)
    assert dist.grids[0]["n_answers"] is None and orc.grids[0]["n_answers"] == 1


# --------------------------------------------------------------------------------------------
# Bias degree and significance degree by hand


def test_bias_degree_uses_the_sister_grid() -> None:
    # Oracle everywhere except the paper's gpt-4o-mini pair: (3,4) answered {2, 3} and its
    # sister (9,10) answered {1, 4}; both have no equilibrium.
    m = metrics_from_samples(
        with_overrides({(3, 4): [frozenset({2, 3})], (9, 10): [frozenset({1, 4})]})
    )
    # Freq(3,4) = (0,1,1,0), Freq(9,10) = (1,0,0,1). BD term of (3,4):
    # o=1: 0 − F(9,10)[4]=1; o=2: 1 − F[2]=0; o=3: 1 − F[3]=0; o=4: 0 − F[1]=1 → (1+1+1+1)/4 = 1.
    # Same for (9,10). BD = 2/144; BD_0 = 2/18; the other groups 0.
    assert m.bd_pct == approx(100 * 2 / 144)
    assert m.bd_by_n_pct == {0: approx(100 * 2 / 18), 1: approx(0), 2: approx(0)}
    # ID: each of the two grids has 2 wrong cells → 2/4; ID = 1/144, ID_0 = 1/18.
    assert m.id_pct == approx(100 / 144) and m.id_by_n_pct[0] == approx(100 / 18)
    assert m.par_pct == approx(100 * 142 / 144) and m.par_by_n_pct[0] == approx(100 * 16 / 18)
    # SD: (3,4) is yellow (S = −1): (0 + 0 − 1 − 1)/4 · (−1) = 1/2; (9,10) green: (1+1−0−0)/4 = 1/2.
    # SD = (1/2 + 1/2)/18 = 1/18 (the paper's gpt-4o-mini CoT value, 5.56%, is exactly this).
    assert m.sd_pct == approx(100 / 18)
    by_pos = {(r["row"], r["col"]): r for r in m.grids}
    assert by_pos[(3, 4)]["bd_term"] == approx(1.0) and by_pos[(9, 10)]["bd_term"] == approx(1.0)
    assert by_pos[(4, 3)]["bd_term"] == approx(0.0)  # the (j, i) mirror is untouched


def test_symmetric_grids_pair_with_themselves() -> None:
    # The Prisoner's Dilemma (6,7) is its own sister. Answering A1B1 (choice 1) is not symmetric:
    # its mirror is choice 4, so the BD term is ((1 − 0)² + (0 − 1)²)/4 = 1/2. Answering
    # A1B2 (choice 2, mutual cooperation) is its own mirror: term 0.
    m1 = metrics_from_samples(with_overrides({(6, 7): [frozenset({1})]}))
    assert m1.bd_pct == approx(100 * 0.5 / 144) and m1.bd_by_n_pct[1] == approx(100 * 0.5 / 108)
    m2 = metrics_from_samples(with_overrides({(6, 7): [frozenset({2})]}))
    assert m2.bd_pct == approx(0)
    assert m2.par_pct == approx(100 * 143 / 144)


def test_asymmetric_pair_on_one_ne_grids() -> None:
    # (1,1) and its sister (12,12), both one-NE grids. Give (1,1) half the time its standard cell
    # and half the time nothing; the sister stays perfect.
    g, s = game_at(1, 1), game_at(12, 12)
    assert g.sister == (12, 12) and g.n_ne == s.n_ne == 1
    (o,) = standard_answer(g)
    m = metrics_from_samples(with_overrides({(1, 1): [frozenset({o}), frozenset()]}))
    # Freq(1,1)[o] = 1/2 vs its mirror in (12,12) = 1 → each of the two grids' terms is 1/4 · 1/4.
    assert m.bd_pct == approx(100 * 2 * (0.25 / 4) / 144)
    assert m.id_pct == approx(100 * (0.25 / 4) / 144)
    assert m.par_pct == approx(100 * (143 + 0.5) / 144)


def test_sd_sign_follows_the_pattern() -> None:
    yellow = [(r, c) for r in range(1, 4) for c in range(4, 7)]
    green = [(r, c) for r in range(7, 10) for c in range(10, 13)]
    # The paper's pattern everywhere: yellow answers {2,3}, green answers {1,4} → SD = 1/2.
    pattern = {p: [frozenset({2, 3})] for p in yellow} | {p: [frozenset({1, 4})] for p in green}
    assert metrics_from_samples(with_overrides(pattern)).sd_pct == approx(50)
    # The mirrored pattern gives −1/2 (the formula is not confined to [0, 1] as the paper says).
    mirrored = {p: [frozenset({1, 4})] for p in yellow} | {p: [frozenset({2, 3})] for p in green}
    assert metrics_from_samples(with_overrides(mirrored)).sd_pct == approx(-50)


# --------------------------------------------------------------------------------------------
# Repetitions, distributions, failures


def test_t_repetitions_average_correctly() -> None:
    g = game_at(1, 1)
    std = standard_answer(g)
    answers = [std, std, frozenset(), None, frozenset({1, 2, 3, 4}), std, std, frozenset({1})]
    m = metrics_from_samples(with_overrides({(1, 1): answers}))
    row = next(r for r in m.grids if (r["row"], r["col"]) == (1, 1))
    assert row["n_answers"] == 8
    assert row["par"] == approx(4 / 8)
    assert row["failure_rate"] == approx(1 / 8)
    # Freq counts over all 8 tests (the failure contributes no cell).
    expected_freq = [
        sum(1 for a in answers if a is not None and o in a) / 8 for o in (1, 2, 3, 4)
    ]
    assert row["freq"] == [approx(f) for f in expected_freq]
    assert row["std"] == [int(o in std) for o in (1, 2, 3, 4)]
    assert row["id_term"] == approx(sum((f - s) ** 2 for f, s in zip(expected_freq, row["std"])) / 4)
    # PAR is linear in the tests: the mean of the eight one-test runs.
    singles = [metrics_from_samples(with_overrides({(1, 1): [a]})).par_pct for a in answers]
    assert m.par_pct == approx(sum(singles) / 8)
    # And sampling equals its own empirical distribution.
    dist = {pos: samples_to_distribution(v) for pos, v in with_overrides({(1, 1): answers}).items()}
    assert_same_summary(metrics_from_distributions(dist), m)
    assert m.parse_failure_rate == approx(1 / 8 / 144)


def test_unequal_t_weighs_grids_equally() -> None:
    std = standard_answer(game_at(2, 2))
    wrong = frozenset({1, 2, 3, 4})
    m = metrics_from_samples(with_overrides({(2, 2): [std] * 9 + [wrong]}))
    # (2,2) scores 9/10 whatever the T of other grids.
    assert m.par_pct == approx(100 * (143 + 0.9) / 144)


def test_unparseable_modes() -> None:
    std = standard_answer(game_at(1, 1))
    data = with_overrides({(1, 1): [std, None], (12, 12): [None, None]})
    wrong = metrics_from_samples(data)
    excl = metrics_from_samples(data, unparseable="exclude")
    # "wrong": (1,1) scores 1/2, (12,12) scores 0 for PAR.
    assert wrong.par_pct == approx(100 * 142.5 / 144) and wrong.n_grids == 144
    # "exclude": (1,1) is renormalised to 1; (12,12) has no parsed answer and drops out.
    assert excl.par_pct == approx(100) and excl.n_grids == 143
    assert excl.bd_pct == approx(0)  # (1,1)'s sister is gone, the rest are perfect
    # The failure rate is reported either way: (1/2 + 1)/144.
    assert wrong.parse_failure_rate == approx(1.5 / 144) == excl.parse_failure_rate


def test_accepts_parser_results_and_all_key_kinds() -> None:
    g = game_at(3, 4)  # no equilibrium
    texts = ["```python\nanswer = []\n```", "answer = [('A1','B2'), ('A2','B1')]", "gibberish"]
    parsed = [parse_answer_set(t) for t in texts]
    data: dict = {x.id: [standard_answer(x)] for x in GAMES if x.id != g.id}
    data[(3, 4)] = parsed
    m = metrics_from_samples(data)
    row = next(r for r in m.grids if r["id"] == "444")
    assert row["par"] == approx(1 / 3) and row["failure_rate"] == approx(1 / 3)
    assert row["freq"] == [0, approx(1 / 3), approx(1 / 3), 0]
    data2 = {x: [standard_answer(x)] for x in GAMES}
    assert metrics_from_samples(data2).par_pct == approx(100)


def test_partial_grids() -> None:
    m = metrics_from_samples({"444": [frozenset()], "111": [frozenset({3})]})
    assert m.n_grids == 2 and m.par_pct == approx(100) and m.id_pct == approx(0)
    assert m.bd_pct == approx(0)  # only 111 (its own sister) qualifies
    assert m.par_by_n_pct == {0: approx(100), 1: approx(100), 2: None}
    assert m.bd_by_n_pct[0] is None and m.bd_pct_ci95 == [0.0, 0.0]
    assert m.sd_pct == approx(0)
    only = metrics_from_samples({"444": [frozenset()]})
    assert only.bd_pct is None and only.anti_bd_pct is None and only.bd_pct_ci95 is None


# --------------------------------------------------------------------------------------------
# Validation and output


@pytest.mark.parametrize(
    "call",
    [
        lambda: metrics_from_samples({}),
        lambda: metrics_from_samples({"444": []}),
        lambda: metrics_from_samples({"444": [frozenset({5})]}),
        lambda: metrics_from_samples({"444": [frozenset()], (3, 4): [frozenset()]}),
        lambda: metrics_from_samples({"444": [frozenset()]}, unparseable="ignore"),
        lambda: metrics_from_distributions({"444": {frozenset(): 0.5}}),
        lambda: metrics_from_distributions({"444": {frozenset(): 1.5, None: -0.5}}),
        lambda: metrics_from_distributions({"444": {frozenset(): float("nan")}}),
    ],
)
def test_bad_input_raises_value_error(call) -> None:
    with pytest.raises(ValueError):
        call()


def test_unknown_grid_raises() -> None:
    with pytest.raises(KeyError):
        metrics_from_samples({"999": [frozenset()]})
    with pytest.raises(TypeError):
        metrics_from_samples({"444": ["A1B2"]})


def test_summary_keys_and_cis() -> None:
    m = metrics_from_samples({g.id: [frozenset()] for g in GAMES}, seed=7)
    s = summary_keys(m)
    expected = {
        "par_pct", "id_pct", "bd_pct", "par_pct_ci95", "id_pct_ci95", "bd_pct_ci95",
        "anti_id_pct", "anti_bd_pct", "sd_pct", "parse_failure_rate", "n_grids",
    } | {f"{k}_{n}_pct" for k in ("par", "id", "bd", "anti_id", "anti_bd") for n in (0, 1, 2)}
    assert set(s) == expected
    assert s["n_grids"] == 144 and s["par_pct"] == approx(12.5)
    lo, hi = s["par_pct_ci95"]
    assert 0 <= lo < 12.5 < hi <= 100
    assert s == summary_keys(metrics_from_samples({g.id: [frozenset()] for g in GAMES}, seed=7))
    assert isinstance(m, TMGBenchMetrics)
    assert len(m.grids) == 144 and [(r["row"], r["col"]) for r in m.grids] == sorted(
        (g.row, g.col) for g in GAMES
    )
    assert set(m.grids[0]) >= {"id", "row", "col", "n_ne", "par", "freq", "std"}
