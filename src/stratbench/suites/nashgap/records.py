"""The Nash-gap suite's records: one per trial (a decision of the player in one game), written to
`trials.jsonl` (or, in a combined run, `trials_pure_actions.jsonl` / `trials_mixed_strategy.jsonl`)
the moment it completes. Actions and policies are in the game's own row order, whatever order the
rows were shown in."""

from __future__ import annotations

import hashlib
from typing import Any, Literal, TypedDict, cast

import numpy as np

from stratbench.players import exact_policy
from stratbench.runner.schema import SCORED_STATUSES, NotRequired
from stratbench.suites.nashgap.answers import read_sampled
from stratbench.suites.nashgap.games import GameEntry, rotation_order
from stratbench.suites.nashgap.metrics import zero_sum_metrics
from stratbench.suites.nashgap.players import Decision


class TrialRecord(TypedDict):
    """A line of a trials file."""

    game_id: int  # the game (games.json)
    trial_id: int  # the trial within the game; with log-prob policies, the row-order rotation
    mode: Literal["pure", "mixed"]  # an action, or a mixed strategy
    agent: str  # the player
    rotation: int  # rows were shown rotated by this many places (labels stay in place)
    llm_decision: int | list[float] | None  # the action (pure) or stated strategy (mixed); None when unscored
    policy: list[float] | None  # the distribution scored: exact when known, else the decision itself
    llm_value: float | None  # payoff of `policy` against the Nash column strategy
    best_response_value: float | None  # the best payoff against it
    nash_gap: float | None  # best_response_value - llm_value (the original metric)
    exploitability: float | None  # value - min over columns of policy' A
    nash_gap_normalized: float | None  # divided by the game's payoff range
    exploitability_normalized: float | None
    first_listed_prob: float | None  # probability on the row shown first (position bias)
    label_mass: float | None  # log-prob policies: probability put on legal labels at all
    logprobs: list[float | None] | None  # log-prob policies: each label's log-probability (null: −∞, no probability)
    status: Literal["ok", "parsed", "parse_failed", "error"]
    error: str | None  # why the decision failed (parse_failed / error)
    renormalized: bool  # a stated strategy did not sum to 1 and was rescaled
    raw_sum: float | None  # its sum before rescaling
    raw_response: str | None  # the model's answer, verbatim (a reasoning model's thinking: `reasoning`)
    reasoning: NotRequired[str]  # a reasoning model's thinking (reasoning_content, <think>…</think>)
    # a parsed generated answer: "strict" (its last line is the requested "Action: X" or JSON
    # object summing to 1, and the reply was not cut at the token limit) or "flexible" (extracted
    # from free text); None when no answer was parsed from text (scripted, exact policies, failures)
    parse: NotRequired[Literal["strict", "flexible"] | None]
    finish_reason: NotRequired[str | None]  # generated answers: "stop", or "length" (cut by the budget)
    # chat (--chat, --policy choice): the text the model saw, after its chat template (with the
    # choice policy, up to and including the answer stem); None for raw prompts, whose text is the
    # prompt hashed in prompt_sha256
    rendered: NotRequired[str | None]
    latency_s: float
    usage: dict[str, Any]  # tokens, cache hits
    seed: int  # the decision's seed: derive_seed(llm_seed, game, trial, mode)
    prompt_sha256: str  # the prompt shown


def policy_of(decision: Decision, mode: str, n: int) -> np.ndarray | None:
    """The distribution a decision is scored as (in presented order): the exact policy when the
    player knows it, else the stated strategy (mixed) or the chosen action (pure)."""
    if not decision.scored:
        return None
    if decision.policy is not None:
        return np.asarray(decision.policy, dtype=float)
    if mode == "mixed" and decision.strategy is not None:
        return np.asarray(decision.strategy, dtype=float)
    if mode == "pure" and decision.action is not None:
        v = np.zeros(n)
        v[decision.action] = 1.0
        return v
    return None


def _to_original(vec: Any, order: list[int]) -> Any:
    if vec is None:
        return None
    out = [0.0] * len(order)
    for k, v in enumerate(vec):
        out[order[k]] = v
    return out


def make_record(
    entry: GameEntry, trial_id: int, mode: str, seed: int, prompt: str, decision: Decision,
    agent_name: str, order: list[int] | None = None, rotation: int = 0,
) -> TrialRecord:
    """One trial's record; actions and policies are mapped back to the game's own row order."""
    n = entry.game.shape[0]
    order = order or list(range(n))
    shown = policy_of(decision, mode, n)
    status = decision.status
    error = decision.error
    if decision.scored and shown is None:
        status, error = "error", "player returned no decision"
    pi = np.asarray(_to_original(shown.tolist(), order)) if shown is not None else None
    metrics: dict[str, Any]
    if pi is not None and status in SCORED_STATUSES:
        metrics = zero_sum_metrics(
            entry.game.payoff_row, pi, entry.solution.col_strategy, entry.solution.value
        ).as_dict()
    else:
        metrics = dict.fromkeys(
            ("llm_value", "best_response_value", "nash_gap", "exploitability",
             "nash_gap_normalized", "exploitability_normalized")
        )
    scored = status in SCORED_STATUSES
    if mode == "pure":
        decided: Any = order[decision.action] if scored and decision.action is not None else None
    else:
        decided = _to_original(decision.strategy, order) if scored else None
    return cast(TrialRecord, {
        "game_id": entry.game_id,
        "trial_id": trial_id,
        "mode": mode,
        "agent": agent_name,
        "rotation": rotation,
        "llm_decision": decided,
        "policy": pi.tolist() if pi is not None else None,
        **metrics,
        "first_listed_prob": float(shown[0]) if shown is not None and scored else None,
        "label_mass": decision.label_mass,
        "logprobs": _to_original(decision.logprobs, order),
        "status": status,
        "error": error,
        "renormalized": decision.renormalized,
        "raw_sum": decision.raw_sum,
        "raw_response": decision.raw_response,
        "parse": decision.parse if status == "parsed" else None,
        "finish_reason": decision.finish_reason,
        "rendered": decision.rendered,
        "latency_s": decision.latency_s,
        "usage": decision.usage,
        "seed": seed,
        "prompt_sha256": hashlib.sha256(prompt.encode()).hexdigest(),
        **({"reasoning": decision.reasoning} if decision.reasoning is not None else {}),
    })


METRIC_KEYS = ("llm_value", "best_response_value", "nash_gap", "exploitability", "nash_gap_normalized",
               "exploitability_normalized")


TOL = 1e-6  # rounding in a written record
#: how far a trial's metric may be from the one its policy has in its game, relative to the game's
#: largest payoff: the same computation on another machine differs in the last bits of a sum
#: (~1e-15), never by more; an edit of 1e-6 is no rounding
METRIC_TOL = 1e-9


def record_problem(rec: dict[str, Any], rows: dict[int, int] | None = None,
                   games: dict[int, GameEntry] | None = None, mode: str | None = None,
                   agent: str | None = None, rotations: int | None = None) -> str | None:
    """Why a trial record read back cannot be one stratbench wrote: a scored trial (status ok or
    parsed) holds every metric as a number (a null one would drop out of, or void, every mean), a
    policy that is a probability distribution over its game's rows (``rows``: game id → number of
    rows, where known), gaps that are never negative (a best response is never worse than the
    policy, nor the game's value than what the policy guarantees), and — with ``games`` — metrics
    that are the ones its policy has in its game (recomputed: an edited value is no result).
    Log-probabilities are never above 0; ``mode``, ``agent`` and the rotation (trial id modulo
    ``rotations``) are the run's; the first-listed probability and the label mass are what the
    policy and the log-probabilities give."""
    if mode is not None and rec.get("mode") != mode:
        return f"mode {rec.get('mode')!r} in a {mode} records file"
    if agent and rec.get("agent") != agent:
        return f"agent {rec.get('agent')!r}, but this run's player is {agent!r}"
    t = rec.get("trial_id")
    if rotations and isinstance(t, int) and rec.get("rotation") != t % rotations:
        return f"rotation {rec.get('rotation')!r}, but trial {t} is shown in rotation {t % rotations}"
    lps = rec.get("logprobs")
    # (an error trial keeps the numbers that made it one: a server's top-k whose spellings of a
    # label add up past 1 is written so, fuzz 18 A D2 — only a scored trial's are probabilities)
    if isinstance(lps, list) and rec.get("status") != "error" and any(
            isinstance(x, (int, float)) and not isinstance(x, bool) and x > 1e-6 for x in lps):
        return f"logprobs {lps!r} hold a log-probability above 0, which is no probability"
    if rec.get("status") in ("parse_failed", "error"):  # nothing was decided: no policy, no decision
        held = [k for k in ("policy", "llm_decision") if rec.get(k) is not None]
        if held:
            return f"status {rec.get('status')!r}, but it has a {held[0]} (a trial that failed decided nothing)"
    if rec.get("renormalized") and lps is not None:
        return "renormalized true on a log-probability trial (only a stated distribution is rescaled)"
    if rec.get("status") == "parse_failed":
        e = games.get(rec.get("game_id")) if games is not None else None  # type: ignore[arg-type]
        return _answer_problem(rec, e) if e is not None else None
    if rec.get("status") not in SCORED_STATUSES:
        return None
    for k in METRIC_KEYS:
        v = rec.get(k)
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            return f"a scored trial (status {rec.get('status')!r}) with {k} = {v!r}, not a number"
    for k in ("nash_gap", "exploitability"):
        if rec[k] < -TOL:
            return f"{k} = {rec[k]!r} below 0, which no policy has"
    pol = rec.get("policy")
    if pol is not None:
        m = rows.get(rec.get("game_id")) if rows is not None else None  # type: ignore[arg-type]
        if (not isinstance(pol, list) or not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in pol)
                or any(x < -TOL or x > 1 + TOL for x in pol) or abs(sum(pol) - 1) > 1e-4
                or (m is not None and len(pol) != m)):
            return f"policy {pol!r} is no probability distribution over the game's {m or 'rows'} rows"
    decision = rec.get("llm_decision")
    if isinstance(decision, int) and not isinstance(decision, bool) and isinstance(pol, list) \
            and not 0 <= decision < len(pol):
        return f"llm_decision {decision} is no row of the game"
    if isinstance(pol, list) and pol:
        order = rotation_order(len(pol), int(rec.get("rotation") or 0))
        first = rec.get("first_listed_prob")
        if isinstance(first, (int, float)) and abs(first - pol[order[0]]) > 1e-9:
            return f"first_listed_prob {first!r}, but its policy gives the first-listed row {pol[order[0]]!r}"
    mass = rec.get("label_mass")
    if mass is not None and lps is None:  # (only a log-prob policy has a label mass, with its log-probs)
        return f"label_mass {mass!r} without the log-probabilities it comes from"
    if mass is None and isinstance(lps, list):  # (fuzz 17 A D4: the mean label mass left it out)
        return "no label_mass beside its log-probabilities (a log-prob trial has both)"
    if isinstance(lps, list):  # its policy is what they give, over every row (fuzz 19 A D1: an edited one was summarised)
        m = rows.get(rec.get("game_id")) if rows is not None else None  # type: ignore[arg-type]
        exact = exact_policy([float("-inf") if x is None else float(x) for x in lps]) if all(
            x is None or (isinstance(x, (int, float)) and not isinstance(x, bool)) for x in lps) else "not numbers"
        if isinstance(exact, str) or (m is not None and len(lps) != m) or not isinstance(pol, list) \
                or len(pol) != len(lps) or any(abs(a - float(b)) > 1e-9 for a, b in zip(pol, exact.probs)):
            return f"policy {pol!r} is not what its log-probabilities {lps!r} give"
    if isinstance(mass, (int, float)) and isinstance(lps, list) and lps and all(
            x is None or isinstance(x, (int, float)) for x in lps):
        given = float(sum(np.exp(x) for x in lps if x is not None))
        if abs(mass - given) > 1e-6 * max(1.0, given):
            return f"label_mass {mass!r}, but its log-probabilities give {given!r}"
    e = games.get(rec.get("game_id")) if games is not None else None  # type: ignore[arg-type]
    if e is not None and (why := _answer_problem(rec, e)) is not None:
        return why
    if e is not None and isinstance(pol, list):
        again = zero_sum_metrics(e.game.payoff_row, np.asarray(pol, dtype=float), e.solution.col_strategy,
                                 e.solution.value).as_dict()
        scale = max(1.0, float(np.abs(e.game.payoff_row).max()))
        for k, v in again.items():
            if abs(rec[k] - v) > METRIC_TOL * scale:
                return f"{k} = {rec[k]!r}, but its policy has {v!r} in its game"
    return None


def _answer_problem(rec: dict[str, Any], e: GameEntry) -> str | None:
    """A generated answer (a sampled trial: its raw text, no log-probabilities) must read as the
    record says — status, decision and the answer's kind — when read again as the player read it:
    an edited status or decision beside the model's own text is no result."""
    raw, status = rec.get("raw_response"), rec.get("status")
    if rec.get("logprobs") is not None or status not in ("parsed", "parse_failed"):
        return None
    if not isinstance(raw, str):
        return f"a {status} trial without the raw_response it was read from" if status == "parsed" else None
    mode = rec.get("mode")
    a = read_sampled(raw, e.game.row_labels, str(mode), rec.get("finish_reason"))
    if a.status != status:
        return f"status {status!r}, but its raw_response reads as {a.status} when read again"
    if a.status != "parsed":
        return None
    order = rotation_order(e.game.shape[0], int(rec.get("rotation") or 0))
    want: Any = order[a.action] if mode == "pure" and a.action is not None else _to_original(a.strategy, order)
    got = rec.get("llm_decision")
    same = got == want if mode == "pure" else (
        isinstance(got, list) and len(got) == len(want) and all(
            isinstance(x, (int, float)) and abs(x - y) <= 1e-9 for x, y in zip(got, want)))
    if not same:
        return f"llm_decision {got!r}, but its raw_response says {want!r}"
    if rec.get("parse") != a.parse:
        return f"parse {rec.get('parse')!r}, but its raw_response is a {a.parse} answer"
    if bool(rec.get("renormalized")) != a.renormalized:
        return f"renormalized {rec.get('renormalized')!r}, but its raw_response reads otherwise"
    return None
