"""The functional-ToM suite's records and summaries, as written to its result folders.

`tom run` writes ``rounds.jsonl``: one :class:`RoundRecord` per round played, an episode's rounds
written together the moment the episode ends (ids ``episode``, ``t``). An episode that stops early
(a parse failure or a model error) ends with the round that stopped it, which has no actions.
`tom baseline` writes ``episodes.jsonl``: one :class:`BaselineEpisodeRecord` per simulated
episode, the whole trajectory included so that the metrics can be recomputed. Records stay plain
dicts at run time; the TypedDicts document them (and type the functions that build them).

(No ``from __future__ import annotations`` here: TypedDicts then know their ``NotRequired`` keys at
run time, which the tests use to check the records against this schema.)
"""

from typing import Literal, NotRequired, TypedDict

from stratbench.runner.schema import Status

ROUNDS_FILE = "rounds.jsonl"
EPISODES_FILE = "episodes.jsonl"

EpisodeStatus = Literal["complete", "parse_failed", "error", "partial"]
"""How an episode of `tom run` ended: all T rounds played, stopped by an answer that never parsed,
stopped by a model error, or cut off (an interrupted write: a resumed run plays it again)."""


class CallRecord(TypedDict):
    """One generation (or SocialLM scoring) attempt of a text-generation strategy."""

    kind: Literal["action", "tom", "reflection", "s2a_context", "s2a_tom_context"]  # what the call asked
    attempt: int  # 0-based re-query index (also the request's sample index)
    text: NotRequired[str | None]  # the answer, verbatim (None on a model error)
    reasoning: NotRequired[str]  # a reasoning model's thinking, apart from the answer (never parsed)
    tokens_reasoning: NotRequired[int]  # its tokens, where the server reports them
    tokens_in: int  # prompt tokens evaluated
    tokens_out: int  # tokens generated
    latency_s: float
    cached: bool  # replayed from the response cache
    finish_reason: NotRequired[str | None]  # the backend's (stop, length, ...)
    status: Status  # parsed, parse_failed or error (an empty reply is never parsed)
    parse: NotRequired[Literal["strict", "flexible"]]  # parsed: in the requested format exactly, or read from free text
    reason: NotRequired[str]  # parse_failed: why the template did not match ("empty reply", ...)
    error: NotRequired[str]  # error: the backend's message
    empty: NotRequired[bool]  # an S2A rewrite that said nothing (parse_failed, accepted as is: no paragraph)
    prompt: NotRequired[str]  # --keep-prompts: the prompt (first attempt only; chat: rendered with the template)
    logprobs: NotRequired[list[float | None]]  # SocialLM: the labels' log-probabilities (null: −∞)
    tom_policy: NotRequired[list[float]]  # SocialLM: their softmax
    label_mass: NotRequired[float]  # SocialLM with --chat: the probability on the labels after the stem


class RoundRecord(TypedDict):
    """A line of ``rounds.jsonl`` (`tom run`)."""

    episode: int  # episode index e (seeded derive_seed(seed, e))
    game: str  # rps, ibs or ipd
    partner: str  # the partner policy's name
    prompting: str  # the strategy (LM, QA, CoT, ...)
    initial_state: int  # the partner's initial state in this episode (the regret DP needs it)
    t: int  # round, 0-based
    status: Status  # parsed; parse_failed / error on the round that stopped the episode
    partner_state: NotRequired[int]  # the partner's state when it acted
    my_action: NotRequired[int]  # the agent's action (absent on a stopped round)
    partner_action: NotRequired[int]  # the partner's action (absent on a stopped round)
    payoff_me: NotRequired[float]
    payoff_partner: NotRequired[float]
    prediction: NotRequired[int | None]  # literal ToM: the predicted partner action (None: unparsed)
    tokens_in: int  # tokens the backend evaluated this round (prefix reuse counts only new ones)
    tokens_out: NotRequired[int]  # generation strategies: tokens generated this round
    latency_s: float
    error: NotRequired[str]  # LM prompting: why the round's call failed ("action: ..." / "tom: ...")
    prompts: NotRequired[dict[str, str]]  # LM prompting, --keep-prompts: "action" and "tom" prompts (chat: rendered)
    # LM prompting (log-probabilities of the action labels)
    policy: NotRequired[list[float]]  # the action distribution the action was sampled from
    tom_policy: NotRequired[list[float]]  # the prediction distribution (its argmax is `prediction`)
    label_mass: NotRequired[float]  # --chat (policy choice): probability on the labels after "A: Option"
    tom_label_mass: NotRequired[float]  # --chat: the same for the ToM question
    # generation strategies
    calls: NotRequired[list[CallRecord]]  # every attempt of every call, in call order
    tom_status: NotRequired[Status]  # how the round's ToM prediction went
    failed_call: NotRequired[str]  # the kind of call that stopped the episode
    reflection_status: NotRequired[Status]  # Reflexion: how the reflection went
    plan: NotRequired[str]  # Reflexion: the plan added to the memory
    plans: NotRequired[str]  # Plans+Insights: the answer's plans
    insights: NotRequired[str]  # Plans+Insights: the answer's insights
    s2a_context: NotRequired[str]  # S2A: the rewrite the action prompt was built on
    s2a_tom_context: NotRequired[str]  # S2A: the rewrite the ToM prompt was built on


class BaselineEpisodeRecord(TypedDict):
    """A line of ``episodes.jsonl`` (`tom baseline`)."""

    game: str
    partner: str  # the partner policy as named on the command line (e.g. tit_for_tat)
    episode: int  # episode index e (seeded derive_seed(seed, e))
    status: Literal["ok"]  # the tabular agent never fails
    initial_state: int  # the partner's initial state
    regret_per_step: float  # Δ_F/T: mean advantage gap against the optimal T-step response
    tom_accuracy: float  # fraction of steps whose prediction named the partner's action
    tom_regret_per_step: float  # Δ_ToM/T: mean myopic regret of best-responding to the prediction
    my_actions: list[int]  # the agent's T actions
    partner_actions: list[int]  # the partner's T actions
    predictions: list[int]  # the predicted partner action at each step


class RunSummary(TypedDict):
    """``summary.json`` of `tom run` (means over complete episodes, with 95% bootstrap CIs)."""

    game: str
    partner: str
    prompting: str
    model: str | None
    label_set: str
    tom_variant: str
    history: bool
    payoffs: bool
    T: int  # rounds per episode
    seed: int
    policy: Literal["logprob", "choice", "generate"]  # how actions were read (choice: LM prompting with --chat)
    regret_per_step: float | None  # None when no episode is complete
    regret_per_step_ci95: list[float] | None
    tom_accuracy: float | None  # over parsed predictions
    tom_accuracy_ci95: list[float] | None
    tom_regret_per_step: float | None
    tom_regret_per_step_ci95: list[float] | None
    n_tom_episodes: int  # complete episodes with at least one parsed prediction
    # strict-match metrics (results module doc): flexible parses counted as failures
    strict_regret_per_step: float | None  # over the strict episodes
    strict_regret_per_step_ci95: list[float] | None
    strict_tom_accuracy: float | None  # strict episodes, strictly read predictions
    strict_tom_accuracy_ci95: list[float] | None
    strict_tom_regret_per_step: float | None
    strict_tom_regret_per_step_ci95: list[float] | None
    n_strict_episodes: int  # complete episodes none of whose play-shaping answers was read flexibly
    n_strict_tom_episodes: int  # strict episodes with at least one strictly read prediction
    n_episodes: int  # complete episodes (the metrics' sample)
    n_episodes_run: int  # episodes with records
    n_parse_failed_episodes: int
    n_error_episodes: int  # stopped by a model error (exit code 1; --resume plays them again)
    n_partial_episodes: int
    parse_failure_rate: float  # generation strategies: action attempts that did not parse
    strict_parse_rate: float | None  # action attempts read strictly (None: no generated answer)
    flexible_parse_rate: float | None  # action attempts read flexibly
    action_attempts: int
    tom_parse_failure_rate: float | None  # rounds whose ToM answer never parsed
    tom_strict_parse_rate: float | None  # rounds with a generated ToM answer: read strictly
    tom_flexible_parse_rate: float | None  # ... read flexibly
    tokens_evaluated: int
    tokens_evaluated_per_episode: float
    tokens_generated: int
    tokens_generated_per_episode: float
    shard: NotRequired[str]  # a shard's summary: "i/n"


class BaselineRow(TypedDict):
    """A row of `tom baseline`'s ``summary.json`` ``settings`` (one per game × partner)."""

    game: str
    partner: str  # the partner's full name (e.g. tit_for_tat_best_response)
    T: int
    seed: int
    m: int  # R-max's "known" threshold (always 1)
    regret_per_step: float | None
    regret_per_step_ci95: list[float] | None
    tom_accuracy: float | None
    tom_accuracy_ci95: list[float] | None
    tom_regret_per_step: float | None
    tom_regret_per_step_ci95: list[float] | None
    n_episodes: int


class BaselineSummary(TypedDict):
    """``summary.json`` of `tom baseline`."""

    settings: list[BaselineRow]
    shard: NotRequired[str]


class RunTotalsTom(TypedDict, total=False):
    """run.json ``totals`` of `tom run` (besides the shared `records`, `errors` and `model_*`)."""

    episodes: int  # episodes with records
    complete_episodes: int
    parse_failed_episodes: int
    tokens_evaluated: int
    tokens_generated: int


class BaselineTotals(TypedDict):
    """run.json ``totals`` of `tom baseline`."""

    settings: int  # game × partner settings
    records: int  # episodes
    errors: Literal[0]
    seconds: float


__all__ = [
    "EPISODES_FILE", "ROUNDS_FILE", "BaselineEpisodeRecord", "BaselineRow", "BaselineSummary", "BaselineTotals",
    "CallRecord", "EpisodeStatus", "RoundRecord", "RunSummary", "RunTotalsTom",
]
