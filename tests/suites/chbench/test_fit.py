"""CHBench MLE fits: recovery of known agents, determinism, observations CSV."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stratbench.errors import InputError
from stratbench.games.normal_form import NormalFormGame
from stratbench.suites.chbench.catalogue import build_catalogue
from stratbench.suites.chbench.fit import (
    CHAgent,
    fit_level_k,
    fit_poisson_ch,
    level_kl,
    observations_from_csv,
    simulate_counts,
    simulate_rounds,
    write_observations_csv,
)

CAT = build_catalogue()


@pytest.mark.parametrize("lam,n_per_role", [(0.5, 67), (1.5, 67), (3.0, 200)])
def test_poisson_recovery(lam: float, n_per_role: int) -> None:
    # Stated tolerance |λ̂ − λ| ≤ 0.35. Pooled actions: 15 games × 2 roles × n_per_role = 2010
    # for λ = 0.5, 1.5; 6000 for λ = 3, where k̂ = 4 makes the likelihood flat in λ (at 2010
    # actions the 95th percentile of λ̂ over 20 seeds is 3.5).
    obs = simulate_counts(CHAgent("p", "poisson", lam=lam), CAT, n_per_role, seed=11)
    fit = fit_poisson_ch(obs, seed=0)
    assert abs(fit.lam - lam) <= 0.35
    assert sum(fit.level_distribution) == pytest.approx(1.0)


def _random_games(n: int, seed: int) -> dict[int, NormalFormGame]:
    rng = np.random.default_rng(seed)
    return {
        i + 1: NormalFormGame(rng.integers(0, 10, (3, 3)).astype(float), rng.integers(0, 10, (3, 3)).astype(float))
        for i in range(n)
    }


@pytest.mark.parametrize(
    "alpha,eps",
    [((0.2, 0.3, 0.3, 0.2), (0.1, 0.1, 0.1)), ((0.1, 0.6, 0.2, 0.1), (0.05, 0.05, 0.05))],
)
def test_level_k_recovery(alpha, eps) -> None:
    # In the catalogue levels 1..3 mostly coincide (α not identifiable there), so recovery uses
    # 20 random 3×3 games × 2 roles × 500 = 20,000 actions; stated tolerance max|α̂ − α| ≤ 0.1.
    obs = simulate_counts(CHAgent("p", "level_k", alpha=alpha, epsilon=eps), _random_games(20, 5), 500, seed=2)
    fit = fit_level_k(obs, seed=0)
    assert np.max(np.abs(np.array(fit.alpha) - alpha)) <= 0.1
    assert sum(fit.alpha) == pytest.approx(1.0)
    assert fit.neg_log_likelihood <= fit_level_k(obs, restarts=1, seed=3).neg_log_likelihood + 1e-6


def test_determinism_and_csv_roundtrip(tmp_path) -> None:
    a = CHAgent("alice", "poisson", lam=1.2)
    b = CHAgent("bob", "level_k", alpha=(0.3, 0.4, 0.2, 0.1), epsilon=(0.1, 0.1, 0.1))
    rows = simulate_rounds(CAT, a, b, 30, seed=4) + simulate_rounds(CAT, b, a, 30, seed=5)
    assert rows == simulate_rounds(CAT, a, b, 30, seed=4) + simulate_rounds(CAT, b, a, 30, seed=5)
    p = tmp_path / "obs.csv"
    write_observations_csv(p, rows)
    obs = observations_from_csv(p, CAT, allow_uncertain=True)  # every game, placeholders included
    assert set(obs) == {"alice", "bob"}
    assert obs["alice"].n_actions_observed == 15 * 60
    f1 = fit_level_k(obs["bob"], seed=7)
    f2 = fit_level_k(obs["bob"], seed=7)
    assert f1 == f2
    g1, g2 = fit_poisson_ch(obs["alice"], seed=7), fit_poisson_ch(obs["alice"], seed=7)
    assert g1 == g2
    assert level_kl(obs["bob"], f1).shape == (2, 15, 3)
    d = g1.to_dict()
    assert {"lambda", "level_distribution", "mean_level", "neg_log_likelihood", "k_hat"} <= set(d)


def test_csv_rejects_bad_input(tmp_path) -> None:
    p = tmp_path / "bad.csv"
    p.write_text("game_id,round,row_player,col_player,row_action,col_action\n1,1,a,b,A,Z\n")
    with pytest.raises(InputError, match="action"):
        observations_from_csv(p, CAT)
    p.write_text("game_id,round,row_player\n1,1,a\n")
    with pytest.raises(InputError, match="missing column"):
        observations_from_csv(p, CAT)
    p.write_text("game_id,round,row_player,col_player,row_action,col_action\n42,1,a,b,A,A\n")
    with pytest.raises(InputError, match="not in the catalogue"):
        observations_from_csv(p, CAT)


# ----------------------------------------------------------------------------- what action numbers mean

OBS_HEAD = "game_id,round,row_player,col_player,row_action,col_action\n"


def _numbered(rows, base: int, games=CAT):
    """Rows with each action written as its number, counted from `base`."""
    by_id = {g.id: g.game for g in games}
    return [dict(r, row_action=str(by_id[r["game_id"]].row_labels.index(r["row_action"]) + base),
                 col_action=str(by_id[r["game_id"]].col_labels.index(r["col_action"]) + base)) for r in rows]


def test_numbered_actions_need_an_action_base(tmp_path) -> None:
    p = tmp_path / "digits.csv"
    p.write_text(OBS_HEAD + "11,1,a,b,1,2\n")  # game 11 is 3x3
    with pytest.raises(InputError) as e:
        observations_from_csv(p, CAT)
    assert str(e.value).startswith(f"{p}: line 2: action '1' is a number") and "--action-base" in str(e.value)
    zero, one = observations_from_csv(p, CAT, action_base=0), observations_from_csv(p, CAT, action_base=1)
    assert zero["a"].counts[0, 0].tolist() == [0, 1, 0] and one["a"].counts[0, 0].tolist() == [1, 0, 0]
    assert zero["b"].counts[1, 0].tolist() == [0, 0, 1] and one["b"].counts[1, 0].tolist() == [0, 1, 0]
    p.write_text(OBS_HEAD + "1,1,a,b,1,2\n")  # game 1 is 2x2
    with pytest.raises(InputError, match=r"action '2' is out of range: with --action-base 0 the actions are 0\.\.1"):
        observations_from_csv(p, CAT, action_base=0)
    p.write_text(OBS_HEAD + "1,1,a,b,0,1\n")
    with pytest.raises(InputError, match="out of range: with --action-base 1 the actions are 1..2"):
        observations_from_csv(p, CAT, action_base=1)
    with pytest.raises(InputError, match="--action-base 2: use 0"):
        observations_from_csv(p, CAT, action_base=2)


@pytest.mark.parametrize("action", ["²", "١", "１", "½", "Ⅷ"])
def test_non_ascii_numbers_are_refused(tmp_path, action) -> None:
    p = tmp_path / "odd.csv"
    p.write_text(OBS_HEAD + f"1,1,a,b,A,{action}\n", encoding="utf-8")
    for base in (None, 0, 1):
        with pytest.raises(InputError) as e:
            observations_from_csv(p, CAT, action_base=base)
        assert f"action {action!r} is not a number written with ASCII digits" in str(e.value)


@pytest.mark.parametrize("gid", ["１", "٨", "+1", " ", "1.0", "9" * 30])
def test_game_ids_are_ascii_integers(tmp_path, gid) -> None:
    p = tmp_path / "ids.csv"
    p.write_text(OBS_HEAD + f"{gid},1,a,b,A,B\n", encoding="utf-8")
    with pytest.raises(InputError, match="line 2: game_id .* is not an integer"):
        observations_from_csv(p, CAT)


def test_uncertain_games_need_corrections_or_consent(tmp_path) -> None:
    from stratbench.suites.chbench.catalogue import load_corrections

    p = tmp_path / "obs.csv"
    p.write_text(OBS_HEAD + "1,1,a,b,A,B\n12,1,a,b,A,C\n")
    with pytest.raises(InputError) as e:
        observations_from_csv(p, CAT)
    assert str(e.value) == (f"{p}: line 3: game 12's payoffs are uncertain in the catalogue (printed identical to "
                            "#11 (copy error in the paper)); give --corrections FILE with its payoffs, or "
                            "--allow-uncertain to fit the catalogue's matrices")
    assert set(observations_from_csv(p, CAT, allow_uncertain=True)) == {"a", "b"}
    fix = tmp_path / "fix.json"
    fix.write_text('{"12": {"payoff_row": [[1, 2, 3], [3, 2, 1], [2, 2, 2]], "payoff_col": [[1, 2, 3], [3, 2, 1], [2, 2, 2]]}}')
    assert observations_from_csv(p, load_corrections(fix, CAT))["a"].game_ids == (1, 12)


def test_hostile_observation_files(tmp_path) -> None:
    cases = {
        "cell.csv": (OBS_HEAD + "1,1," + "a" * 131_073 + ",b,A,B\n", "line 2: a cell of more than 131072 characters"),
        "ragged.csv": (OBS_HEAD + "1,1,a,b,A\n", "line 2: 5 cells, but the header has 6 columns"),
        "empty.csv": ("", "empty file"),
        "header.csv": (OBS_HEAD, "no observations"),
        "player.csv": (OBS_HEAD + "1,1, ,b,A,B\n", "line 2: empty player name"),
    }
    for name, (text, fragment) in cases.items():
        p = tmp_path / name
        p.write_text(text)
        with pytest.raises(InputError) as e:
            observations_from_csv(p, CAT, label="--data")
        assert str(e.value).startswith(f"--data {p}: ") and fragment in str(e.value)
    latin = tmp_path / "latin.csv"
    latin.write_bytes((OBS_HEAD + "1,1,André,b,A,B\n").encode("latin-1"))
    with pytest.raises(InputError, match="not UTF-8 text"):
        observations_from_csv(latin, CAT)


def test_a_known_lambda_is_recovered_from_labels_and_from_numbers_with_their_base(tmp_path) -> None:
    """Play simulated from Poisson-CH λ = 1.5, exported three ways: labels, 0-based and 1-based
    numbers. Read with the right --action-base the numbers give exactly the labelled file's counts
    and fit; 1-based numbers read as 0-based (yesterday's silent shift) are refused or differ."""
    from stratbench.suites.chbench.catalogue import recoverable

    cat = recoverable(CAT)
    lam = 1.5
    rows = simulate_rounds(cat, CHAgent("p", "poisson", lam=lam), CHAgent("q", "poisson", lam=lam), 150, seed=9)
    files = {"labels": rows, "zero": _numbered(rows, 0, cat), "one": _numbered(rows, 1, cat)}
    for name, rs in files.items():
        write_observations_csv(tmp_path / f"{name}.csv", rs)
    labelled = observations_from_csv(tmp_path / "labels.csv", cat)
    with pytest.raises(InputError, match="--action-base"):
        observations_from_csv(tmp_path / "one.csv", cat)
    fits = {}
    for name, base in (("labels", None), ("zero", 0), ("one", 1)):
        obs = observations_from_csv(tmp_path / f"{name}.csv", cat, action_base=base)
        for player in ("p", "q"):
            np.testing.assert_array_equal(obs[player].counts, labelled[player].counts)
        fits[name] = fit_poisson_ch(obs["p"], restarts=3, seed=0).lam
    assert fits["zero"] == fits["one"] == fits["labels"]
    assert abs(fits["labels"] - lam) <= 0.35
    # 1-based numbers read as 0-based: the last action of every game is out of range
    with pytest.raises(InputError, match="out of range"):
        observations_from_csv(tmp_path / "one.csv", cat, action_base=0)


_cell = st.sampled_from(["1", "8", "0", "A", "B", "C", "²", "a", "", " 2", "x" * 3, "١"])


@given(st.lists(st.lists(_cell, min_size=6, max_size=6), max_size=6), st.sampled_from([None, 0, 1]),
       st.booleans())
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_arbitrary_observation_csvs_give_counts_or_one_input_error(tmp_path, rows, base, allow):
    p = tmp_path / "h.csv"
    p.write_text(OBS_HEAD + "".join(",".join(r) + "\n" for r in rows), encoding="utf-8")
    try:
        obs = observations_from_csv(p, CAT, action_base=base, allow_uncertain=allow)
    except InputError as e:
        assert "\n" not in str(e)
    else:
        assert sum(o.n_actions_observed for o in obs.values()) == 2 * len(rows)


def test_fit_report_carries_what_chbench_run_reports() -> None:
    from stratbench.suites.chbench.fit import fit_report, improvement_ratio, mean_level_ci

    obs = simulate_counts(CHAgent("p", "poisson", lam=1.0), CAT[:6], 30, seed=3)
    rep = fit_report(obs, "poisson", 4, 2, seed=1, n_boot=20)
    assert rep["model"] == "poisson" and rep["k_hat"] == 4
    lo, hi = rep["mean_level_ci95"]
    assert lo <= hi and 0 <= lo and hi <= 3
    assert set(rep["likelihood_improvement_ratio"]) == {"3->4", "4->5"}
    assert all(r is None or -1 < r < 1 for r in rep["likelihood_improvement_ratio"].values())
    assert len(rep["kl_consecutive_levels"]) == 3
    assert rep == fit_report(obs, "poisson", 4, 2, seed=1, n_boot=20)  # deterministic
    assert fit_report(obs, "level_k", 1, 1, seed=0, n_boot=0)["likelihood_improvement_ratio"]["0->1"] is None
    assert mean_level_ci(obs, "poisson", 4, 2, 0, 0) is None
    assert mean_level_ci(obs.subset([1]), "poisson", 4, 2, 5, 0) is None  # one game: nothing to resample
    assert improvement_ratio(None, None) is None
