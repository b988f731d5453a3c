"""The written schema of TMGBench's result files. Records stay plain dicts at run time (each is
appended to its JSONL file the moment its unit of work ends); these TypedDicts say what each key
holds, and the functions that build records are annotated with them.

Files of an atomic run (`tmgbench_<time>/`): `answers.jsonl` (:class:`AnswerRecord`, one per game,
story variant and repetition), `summary.json` (:class:`AtomicSummary`), `grids.json` (one
:class:`GridRow` per grid answered) and, when all 144 grids are there, four heat maps
(`{standard,practical,inconsistency,sister_symmetry}_heatmap.png`).
Files of a complex-form run (`tmgbench_<form>_<time>/`): `tasks.jsonl` (:class:`TaskRecord`, one
per task) and `summary.json` (:class:`ComplexSummary`).
Files of story generation (`stories_<time>/`): `generation.jsonl` (:class:`StoryAttemptRecord`, one
per attempt), `summary.json` (:class:`StoriesSummary`) and the accepted stories in `story-based/`.

run.json totals: atomic and complex runs write `records`, `errors` and the player's `model_*`
usage (:class:`~stratbench.runner.schema.RunTotals`); story generation writes the usage only.
"""

from __future__ import annotations

from typing import Any, Literal, TypedDict

from stratbench.runner.schema import NotRequired, Status


class Usage(TypedDict, total=False):
    tokens_in: int | None  # prompt tokens the backend evaluated
    tokens_out: int | None  # generated tokens (sampled answers only)
    cached: bool  # the answer came from the response cache
    tokens_reasoning: int  # reasoning models: the reasoning tokens, where the server reports them
    n_tokens: list[int] | None  # log-prob scoring: tokens per candidate continuation
    usage_unknown: bool  # only when true: the provider reported no usable counts (the 0s above are not counts)


class AnswerRecord(TypedDict):
    """`answers.jsonl`: one answer of one player to one atomic task, in the order (variant, row,
    col, repeat)."""

    game_id: str  # TMGBench id "LRC", e.g. "111" (the Prisoner's Dilemma)
    row: int  # grid row 1..12 (A's pattern)
    col: int  # grid column 1..12 (B's pattern)
    variant: int  # story variant k of `{id}_{k}.txt` (0 in the classic setting)
    setting: NotRequired[str]  # "classic" or "story" (absent on records of an exception)
    repeat: int  # repetition 0..T-1 (exact players answer once: 0)
    player: str  # the player spec: oracle/empty/uniform or a model spec
    policy: NotRequired[str]  # "scripted", "logprob", "choice" or "sample"
    prompting: NotRequired[str]  # DA, CoT, FoToM, SoToM, reFoToM or reSoToM
    standard: NotRequired[list[int]]  # the standard answer: choice numbers 1..4 of the pure NE
    status: Status  # ok (scripted), parsed, parse_failed (nothing guessed), error (no answer)
    distribution: NotRequired[dict[str, float]]  # exact players: answer subset ("" or "14") → probability
    logprobs: NotRequired[dict[str, float | None]]  # logprob/choice: answer subset → log-probability of its line (null: −∞)
    label_mass: NotRequired[float]  # logprob/choice: total probability of the 16 answer lines
    answer: NotRequired[list[int]]  # sample policy, parsed: the cells answered (choice numbers)
    parse: NotRequired[Literal["strict", "flexible"]]  # sample policy, parsed: in the requested format or not
    parse_note: NotRequired[str]  # flexible answers: how the answer departs from the requested format
    raw_response: NotRequired[str | None]  # sample policy: the model's answer, as generated
    reasoning: NotRequired[str]  # sample policy: a reasoning model's thinking (never parsed)
    finish_reason: NotRequired[str | None]  # sample policy: "stop", or "length" when the budget cut the reply
    # hash of the prompt text (raw: the completion prompt; --chat and choice: the user message);
    # None for scripted players
    prompt_sha256: NotRequired[str | None]
    # --chat / choice with a local model: the whole prompt after the chat template (choice: with
    # the answer stem the 16 answer lines continue)
    rendered_prompt: NotRequired[str]
    usage: NotRequired[Usage]  # the call's token counts and cache hit
    error: NotRequired[str | None]  # why there is no answer (error) or it could not be read (parse_failed)
    latency_s: NotRequired[float]  # seconds to answer


class GridRow(TypedDict):
    """`grids.json`: one grid's answer statistics (fractions), the heat maps' input."""

    id: str  # TMGBench game id
    row: int  # grid row 1..12
    col: int  # grid column 1..12
    n_ne: int  # pure Nash equilibria of the game (0, 1 or 2)
    n_answers: int | None  # T for sampled answers, None for exact distributions
    failure_rate: float  # share of unparseable answers
    par: float  # probability the answer is exactly the standard set
    freq: list[float]  # Freq_o: probability that cell o (1..4) is in the answer
    std: list[int]  # 0/1: cell o is in the standard answer
    id_term: float  # this grid's inconsistency term (mean squared Freq − std)
    bd_term: float | None  # this grid's bias term against its sister (None without the sister)
    sister: list[int]  # the (row, col) of the role-swapped sister game


class AtomicSummary(TypedDict, total=False):
    """`summary.json` of an atomic run: the paper's metrics in percent (`*_ci95`: bootstrap 95%
    intervals over grids). Story runs with several variants report each metric's mean over
    variants with `*_std`, and the per-variant summaries under `variants`."""

    par_pct: float | None  # precision of the answer set (exact match), mean over grids
    id_pct: float | None  # inconsistency degree
    bd_pct: float | None  # bias degree (against the role-swapped sister game)
    # also par_{n}_pct, id_{n}_pct, bd_{n}_pct, anti_id_{n}_pct, anti_bd_{n}_pct for n = 0, 1, 2 pure NE
    anti_id_pct: float | None  # 100 (1 − √ID)
    anti_bd_pct: float | None  # 100 (1 − √BD)
    sd_pct: float | None  # significance degree on the 0-NE blocks (in [−50, 50])
    parse_failure_rate: float  # mean share of unparseable answers (a fraction)
    n_grids: int  # grids with usable answers
    mean_label_mass: float | None  # logprob/choice: mean probability of the answer lines
    strict_parse_rate: float  # sampled answers: share in the requested format (errors excluded)
    flexible_parse_rate: float  # sampled answers: share read from free text by the lenient reader
    strict_par_pct: float | None  # PAR with flexible answers counted as failures (also strict_id_pct,
    # strict_bd_pct and their _ci95; story runs: mean over variants with _std)
    error_rate: float  # share of records with status error
    n_records: int  # records in answers.jsonl
    status_counts: dict[str, int]  # records per status
    n_variants: int  # story setting with several variants
    variants: dict[str, dict[str, Any]]  # story setting: variant → its own summary
    player: str  # the player spec
    policy: str  # scripted, logprob, choice or sample
    prompting: str  # the prompting method
    setting: str  # classic or story
    form: str  # "atomic"
    repeats: int  # answers per game (1 for exact players)
    shard: str  # "i/n" in a shard's summary only


class TaskRecord(TypedDict):
    """`tasks.jsonl`: one complex-form task and its score, in task order. The task's definition
    appears twice, as `task_*` keys and unprefixed (what `score_complex` reports)."""

    task_index: int  # the task's index in the unsharded run (its seed is derived from it)
    player: str  # the player spec
    prompting: NotRequired[str]  # the prompting method
    task_form: NotRequired[str]  # sequential, parallel or nested
    task_k: NotRequired[int]  # games per task
    task_game_ids: NotRequired[list[str]]  # the games, in presentation order (nested: pre, core)
    task_seed: NotRequired[int]  # the run's seed
    task_restricted_player: NotRequired[str | None]  # nested: "A" or "B"
    task_restricted_situation: NotRequired[int | None]  # nested: the pre-game cell 1..4 that restricts
    task_restricted_choice: NotRequired[str | None]  # nested: the forbidden core-game action
    status: Status  # ok (scripted), parsed, parse_failed, error
    expected: NotRequired[list[list[int]]]  # the standard answer per answered game
    answers: NotRequired[list[list[int] | None]]  # the answers given (None: unreadable)
    per_game_correct: NotRequired[list[bool]]  # exact match per answered game
    n_correct_games: NotRequired[int]  # how many answered games are right
    all_correct: NotRequired[bool]  # every answered game right
    correct: NotRequired[bool]  # the task's score (= all_correct)
    parse_failed: NotRequired[bool]  # some answer could not be read
    myopic_answer: NotRequired[list[int] | None]  # nested: the pre-game's own NE set
    gave_myopic: NotRequired[bool]  # nested: the answer ignored the core game
    raw_responses: NotRequired[list[str]]  # model players: the replies, one per turn
    reasonings: NotRequired[list[str | None]]  # reasoning models: each reply's thinking (never parsed)
    finish_reasons: NotRequired[list[str | None]]  # model players: each reply's finish reason
    parse: NotRequired[Literal["strict", "flexible"]]  # parsed: every answer in the requested format, none cut
    parse_note: NotRequired[str]  # flexible: how an answer departs from the requested format
    # --chat with a local model: the last call's prompt after the chat template (a sequential
    # task's last turn holds every earlier game and reply as real turns)
    rendered_prompt: NotRequired[str]
    error: NotRequired[str | None]  # why there is no answer (status error)
    latency_s: NotRequired[float]  # seconds for the task
    # and form, k, game_ids, index, seed, restricted_player, restricted_situation, restricted_choice


class ComplexSummary(TypedDict, total=False):
    """`summary.json` of a complex-form run."""

    n_tasks: int  # tasks scored (errors excluded)
    forms: list[str]  # "form/k=K" groups present
    accuracy_pct: float | None  # tasks answered all-correct, percent
    accuracy_pct_ci95: list[float] | None  # bootstrap 95% interval over tasks
    parse_failure_rate: float | None  # share of tasks with an unreadable answer
    strict_parse_rate: float  # model players: share of tasks answered in the requested format
    flexible_parse_rate: float  # model players: share read from free text by the lenient reader
    strict_accuracy_pct: float | None  # accuracy with flexible answers counted as failures
    game_accuracy_pct: float | None  # answered games right, percent
    per_position_accuracy_pct: list[float]  # sequential: accuracy per turn
    myopic_rate: float  # nested: share of myopic answers
    form: str  # the run's form
    k: int  # games per task
    player: str  # the player spec
    error_rate: float  # share of tasks whose model call failed
    shard: str  # "i/n" in a shard's summary only


class StoryAttemptRecord(TypedDict):
    """`generation.jsonl`: one attempt at writing story `{game_id}_{variant}.txt`."""

    game_id: str  # the classic game the story must match
    variant: int  # story index k
    attempt: int  # 0-based; attempts stop at the first accepted story
    topic: str  # the topic the prompt asked for
    raw_response: str | None  # the model's text
    finish_reason: NotRequired[str | None]  # "stop", or "length" when the token budget cut the reply
    rendered_prompt: NotRequired[str]  # --chat with a local model: the prompt after the chat template
    reasoning: NotRequired[str]  # a reasoning model's thinking before its story (never parsed)
    status: Literal["accepted", "rejected", "parse_failed", "error"]  # rejected: its matrix is not the game's
    error: NotRequired[str | None]  # the reason for any status but accepted
    path: NotRequired[str]  # accepted: the story file written


class StoriesSummary(TypedDict):
    """`summary.json` of story generation."""

    n_requested: int  # stories asked for (games × variants)
    n_accepted: int  # stories written
    acceptance_rate: float  # n_accepted / n_requested
    attempts: int  # model calls made
    attempt_status_counts: dict[str, int]  # attempts per status
    stories_dir: str  # where the accepted stories are
