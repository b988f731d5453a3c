"""CHBench's records: one per round of a match, written to ``rounds.jsonl`` (all rounds of a match
at once, the moment the match ends; a resumed run keeps a match only when all its rounds are there
and none is an error), and the counts CHBench adds to run.json's totals.

Actions are 0-based indices into the game's own actions (``row_labels`` / ``col_labels``), each
seat in its own role: the column player's action indexes the columns. Nothing is substituted for a
failed move: its action and the round's payoffs are None and the failure is in its status and
error. Records stay plain dicts at run time; these TypedDicts say what their keys hold.

Generated answers (policy ``sample``): each seat says how its answer was read in its own key,
``row_parse`` / ``col_parse`` (a round holds two answers, one per seat, like every other move
field): ``"strict"`` when the reply is exactly one of the numbers asked for (surrounding whitespace
aside) and was not cut at the token limit, ``"flexible"`` when the parser extracted it from other
text, None when no action was read (parse_failed, error). ``row_finish_reason`` is the backend's
("stop", or "length": cut by the budget). Fits and utilities use every parsed action, strict or
flexible (a strict-only variant of the level fits is not computed); an unparsed move has no action
and is never used. With ``--chat`` the prompt kept is the text the model saw, after its chat
template: the conversation with the advisor's turns, and under ``choice`` the answer stem scored.
"""

# no `from __future__ import annotations`: the TypedDicts' required/optional keys are then right at
# run time too (RoundRecord.__required_keys__)
from typing import Any, Literal, NotRequired, TypedDict

from stratbench.runner.schema import RunTotals

MoveStatus = Literal["ok", "parsed", "parse_failed", "error"]
ParseKind = Literal["strict", "flexible"]
RoundStatus = Literal["complete", "parse_failed", "error"]


class ConsultationTurn(TypedDict):
    """One message of an advisor session (mechanisms ``chat`` and ``chat_memory``)."""

    speaker: str  # "Alex" (the player) or "Sam" (its advisor: the same model)
    text: str | None  # the message as generated (None when the call failed)
    error: str | None  # why the call failed
    finish_reason: NotRequired[str | None]  # "stop", or "length" (cut by the token budget); None on error
    reasoning: NotRequired[str]  # a reasoning model's thinking before its message (never passed on)


class RoundRecord(TypedDict):
    """A line of ``rounds.jsonl``: one round of one match, both seats' moves. The ``row_*`` keys
    below exist for the column seat too, as ``col_*``."""

    match_id: str  # "<mechanism>|<game id>|<row player>|<col player>": the unit of work
    mechanism: str  # baseline, memory, memory10, chat or chat_memory (what the model players saw)
    game_id: int  # the catalogue game (1..15)
    game: str  # its name
    row_player: str  # the row seat's player spec (a model spec or a scripted player)
    col_player: str  # the column seat's player spec
    round: int  # 1..rounds
    row_action: int | None  # the row seat's action, None when it gave none
    row_status: MoveStatus  # ok (scripted), parsed, parse_failed or error
    row_policy: list[float] | None  # the distribution the action was drawn from (scripted, logprob, choice)
    row_raw: str | None  # the generated answer, verbatim (policy "sample")
    row_error: str | None  # why the move failed (parse_failed / error)
    row_tokens_in: int  # prompt tokens evaluated for the move (advisor session included)
    row_tokens_out: int  # tokens generated for it
    row_latency_s: float  # seconds the move took
    # the decision prompt shown (absent with --no-keep-prompts); with --chat as the model saw it,
    # after its chat template (choice: up to and including the answer stem scored)
    row_prompt: NotRequired[str | None]
    row_label_mass: NotRequired[float]  # logprob / choice: probability the model put on the action labels
    row_consultation: NotRequired[list[ConsultationTurn]]  # the advisor session held before this move
    row_parse: NotRequired[ParseKind | None]  # policy sample: how the answer was read (None: not read)
    row_finish_reason: NotRequired[str | None]  # policy sample: the answer's finish reason (None: no answer)
    row_reasoning: NotRequired[str]  # policy sample: a reasoning model's thinking (never parsed)
    # only when true: a call of the move had no usable usage counts (the tokens above are not counts)
    row_usage_unknown: NotRequired[bool]
    col_action: int | None
    col_status: MoveStatus
    col_policy: list[float] | None
    col_raw: str | None
    col_error: str | None
    col_tokens_in: int
    col_tokens_out: int
    col_latency_s: float
    col_prompt: NotRequired[str | None]
    col_label_mass: NotRequired[float]
    col_consultation: NotRequired[list[ConsultationTurn]]
    col_parse: NotRequired[ParseKind | None]
    col_finish_reason: NotRequired[str | None]
    col_reasoning: NotRequired[str]
    col_usage_unknown: NotRequired[bool]
    row_payoff: float | None  # the row seat's payoff, None unless both seats acted
    col_payoff: float | None  # the column seat's payoff
    status: RoundStatus  # complete (both acted), else the worse seat status (error before parse_failed)


class ChbenchTotals(RunTotals, total=False):
    """run.json totals of a ``chbench run`` (records are rounds; errors are rounds with status error)."""

    matches: int  # matches with records in the folder


class FitTotals(TypedDict, total=False):
    """run.json totals of a ``chbench fit`` (its only count: no records file, no model calls)."""

    players: int  # players fitted


def round_record(head: dict[str, Any], played: dict[str, Any]) -> RoundRecord:
    """A round record: the match's keys (match_id .. col_player) then the engine's round record."""
    return {**head, **played}  # type: ignore[typeddict-item]


__all__ = ["ChbenchTotals", "ConsultationTurn", "FitTotals", "MoveStatus", "ParseKind", "RoundRecord",
           "RoundStatus", "round_record"]
