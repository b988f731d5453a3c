"""`stratbench tom run`: a language model plays repeated games against a scripted partner.

Strategies (``--prompting``): LM (log-probabilities of the action tokens after "A: Option", with
prefix reuse) and the paper's text-generation strategies (QA, CoT, CoT3, Social, SocialLM,
PlansInsights, Reflexion, Oracle, OracleMax, S2A, S2ACoT; :mod:`gen_episodes`), each with the ablations
``--no-history`` / ``--no-payoffs``, a label set (``--labels``) and literal-ToM prompts asked after
(``--tom-variant agent_first``) or before (``partner_first``) the agent acts.

Folder: ``run.json``, ``rounds.jsonl`` (one record per round, ids ``episode``/``t``, written an
episode at a time; :class:`records.RoundRecord`), ``summary.json`` and ``regret_curve.png`` - the
summary is computed from the records by :func:`results.summarize_rounds`. The run goes through the
shared lifecycle (:func:`stratbench.runner.lifecycle.execute`): an episode is a unit of work.
``--resume`` keeps finished episodes (complete, or stopped by a parse failure) and runs the rest
again, errored ones included. ``--shard i/n`` plays the episodes whose index e has ``e % n == i -
1``, episode e always with seed ``derive_seed(seed, e)``, so ``stratbench merge`` of all shards
(:func:`merge_tom_runs`) equals the unsharded run record for record (timing and cache-hit fields
aside).

Chat (``--chat``): the model must take conversations (:meth:`LanguageModel.check_chat`, one line
before anything is written for a model without a chat template). Generation strategies send the
paper's prompts as user messages and follow up their own answers as turns of one conversation
where the protocol asks so (:mod:`gen_prompts`, "Chat conversations"). LM prompting becomes its
chat twin, the ``choice`` policy (:mod:`prompts`, "Chat models"): the conversation up to the
assistant's turn, the stem ``A: Option`` and the labels scored as continuations - exact, no
sampling, no parsing; it needs a model whose chat template is known here (local GGUF/HF models,
``embedded-instruct``, an HTTP model given ``--chat-template``: rendered here, scored over the
completions endpoint; refused in one line otherwise), as does Social LM's prediction with
``--chat``. We chose ``--prompting LM --chat`` over a ``--policy choice`` flag: in this suite the
strategy is what ``--prompting`` names and ``--chat`` how it is asked, so the twin is their
combination, and run.json (``agent.policy``) and summary.json (``policy``) name it ``choice``,
never ``logprob``; a suite file's model with ``policy = "choice"`` gets ``chat = true`` (and a chat model
with ``policy = "sample"`` plays LM sections with QA, Figure 1's generated twin). Runtime settings of
HTTP backends (``--timeout``, ``--retries``, ``--wait-for-server``) are stored in the config and,
like the concurrency and server URL, taken from the resuming command on ``--resume``; the chat
template (``--chat-template``) is the run's own, kept from the folder.

Model calls: LM prompting runs episodes one after another on a prefix-reusing backend, through the
response cache: prefix-reuse scores are cached under their own identity (the backend's
``describe()`` names ``prefix_reuse``), so they are never served to a fresh evaluation, and a
re-run of the same episodes is free. Generation strategies go through the response cache (``--no-cache`` to bypass):
their prompts are deterministic given the history and every call carries its own seed and sample
index, so a re-run or resumed run replays finished calls for free, even at temperature > 0.
Episodes of generation strategies run concurrently (``--max-concurrency``), which helps API
backends; local backends serialise calls anyway.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, cast

from stratbench.checks import Ints, Rule, check_config, check_units
from stratbench.errors import BaseUrlNotApplicable, InputError
from stratbench.players.runtime import RuntimeOptions
from stratbench.runner.folders import read_run_json
from stratbench.runner.jsonl import write_bytes_atomic, write_json_atomic
from stratbench.runner.lifecycle import (
    FolderSpec,
    Outcome,
    Progress,
    RunPlan,
    RunResult,
    Stream,
    check_meta,
    execute,
    merge_streams,
    rebuild_config,
)
from stratbench.runner.schema import Record, RunMeta
from stratbench.runner.shard import as_shard, shard_tag
from stratbench.seeding import derive_seed
from stratbench.suites.tom.records import ROUNDS_FILE, RoundRecord
from stratbench.suites.tom.strategies import normalize_prompting

if TYPE_CHECKING:
    from stratbench.models.base import LanguageModel
    from stratbench.suites.tom.gen_episodes import GenSettings


@dataclass
class TomRunConfig(RuntimeOptions):
    """Everything `tom run` needs; stored as run.json's ``config``. How its model runs:
    `RuntimeOptions` (sampling at 0.7 by default)."""

    FIELD_RULES: ClassVar[dict[str, Rule]] = {"memory": Ints(1, 9),  # Reflexion's plans (the paper: 1-3)
                                               "qa_max_tokens": Ints(1, 1_000_000)}
    WHEN_SET: ClassVar[tuple[str, ...]] = (*RuntimeOptions.WHEN_SET, "qa_max_tokens")

    model: str = "embedded"
    game: str = "rps"
    partner: str = "single_action"
    prompting: str = "LM"
    rounds: int = 100
    episodes: int = 1
    seed: int = 0
    label_set: str = "neutral"
    predict: bool = True
    tom_variant: str = "agent_first"
    history: bool = True
    payoffs: bool = True
    chat: bool | None = None  # None: chat for openai: specs, completion-style prompts otherwise
    temperature: float = 0.7  # (RuntimeOptions: 1.0)
    max_tokens: int = 384
    # --qa-max-tokens: the budget of direct answers (QA; the scorecard's sampled chat models): None
    # is 32, room for "Action: 1" but not for a reasoning model's thinking before it
    qa_max_tokens: int | None = None
    max_tries: int = 3
    memory: int = 1
    keep_prompts: bool = False
    shard: Any = None
    output_dir: str = "results"

    def validate(self) -> None:
        """The shared checks of flag values (seed, temperature, counts, ...)."""
        check_config(self, flags={"label_set": "--labels"})
        check_units(self.episodes * self.rounds, "--episodes × --rounds")

    @property
    def policy(self) -> str:
        """How actions are read: ``logprob`` (LM prompting, raw), ``choice`` (LM prompting with
        --chat: exact choice scoring after the chat template) or ``generate`` (sampled answers)."""
        if self.prompting == "LM":
            return "choice" if self.chat else "logprob"
        return "generate"

    def resolve(self) -> TomRunConfig:
        """Validate and fill defaults (canonical strategy name, chat mode, shard as JSON)."""
        from stratbench.models import NATIVE_PROVIDERS, split_spec
        from stratbench.suites.tom.games import get_game
        from stratbench.suites.tom.partners import make_partner
        from stratbench.suites.tom.prompts import TOM_VARIANTS

        self.validate()
        self.prompting = normalize_prompting(self.prompting)
        g = get_game(self.game)
        self.game = g.name
        make_partner(self.partner, g)
        g.action_labels(self.label_set)
        if self.tom_variant not in TOM_VARIANTS:
            raise InputError(f"--tom-variant must be one of {', '.join(TOM_VARIANTS)}, got {self.tom_variant!r}")
        kind, _ = split_spec(self.model)
        self.check_http_options([self.model])
        if self.chat is None:  # OpenAI's models and the chat-only APIs (Claude, Gemini) take conversations
            self.chat = kind == "openai" or kind in NATIVE_PROVIDERS
        sh = as_shard(self.shard)
        if sh.count > self.episodes:
            raise InputError(f"--shard {sh}: more shards than episodes ({self.episodes})")
        self.shard = sh.to_json()
        if self.prompting != "LM":
            self.gen_settings()  # validates the generation settings
        return self

    def gen_settings(self) -> GenSettings:
        """The generation strategies' settings (InputError when they are invalid)."""
        from stratbench.suites.tom.gen_episodes import GenSettings

        return GenSettings(prompting=self.prompting, label_set=self.label_set, predict=self.predict,
                           tom_variant=self.tom_variant, history=self.history, payoffs=self.payoffs,
                           chat=bool(self.chat), temperature=self.temperature, max_tries=self.max_tries,
                           max_tokens=self.max_tokens, memory=self.memory, keep_prompts=self.keep_prompts,
                           **({"qa_max_tokens": self.qa_max_tokens} if self.qa_max_tokens is not None else {}))


class TomRunPlan(RunPlan):
    """One `tom run` (or the unsharded run its shards are merged into): episodes are the units of
    work, each writing its round records."""

    suite = "tom"
    kind = "run"

    def __init__(self, config: TomRunConfig) -> None:
        self.config = config
        self.model: LanguageModel | None = None

    @property
    def lm(self) -> bool:
        return self.config.prompting == "LM"

    def prepare(self) -> None:
        self.config.resolve()

    def resume_from(self, meta: RunMeta, folder: Path) -> None:
        """The saved config, with this invocation's shard checked and its connection settings
        (concurrency, server, cache bypass) applied."""
        check_meta(meta, folder, self.suite, (self.kind,))
        if "prompting" not in meta["config"]:
            raise InputError(f"--resume {folder}: not a tom run folder")
        c = self.config
        saved = rebuild_config(TomRunConfig, meta["config"])
        if c.shard is not None and as_shard(c.shard) != as_shard(saved.shard):
            raise InputError(f"--resume {folder}: the folder is shard {as_shard(saved.shard)}, not {c.shard}")
        saved.max_concurrency, saved.base_url = c.max_concurrency, c.base_url or saved.base_url
        saved.no_cache = c.no_cache
        saved.timeout, saved.retries, saved.wait_for_server = c.timeout, c.retries, c.wait_for_server
        try:
            self.config = saved.resolve()
        except BaseUrlNotApplicable:
            if c.base_url:  # (the command's own --base-url, for a local model: its line as it is)
                raise
            saved.base_url = None  # (a folder saved when the flag was ignored for a local model)
            self.config = saved.resolve()
        except InputError as e:  # (the saved config's own values, a game's label set among them)
            raise InputError(f"--resume {folder}/run.json: its saved config is not valid: {e}; the folder is left "
                             "as it is") from None

    def open(self) -> None:
        c = self.config
        # prefix-reuse scores are cached under their own identity (describe() names prefix_reuse),
        # so a re-run is served from the cache like any other
        model = c.open_model(c.model, chat=bool(c.chat), prefix_reuse=self.lm)
        try:
            if c.prompting in ("LM", "SocialLM") and not model.supports_logprobs:
                raise InputError(f"{c.model}: --prompting {c.prompting} scores the options by their log-probabilities, "
                                 "which this API does not return; use a generation strategy (e.g. --prompting QA)")
            if c.chat:
                model.check_chat()
                if c.prompting in ("LM", "SocialLM") and not model.supports_chat_scoring:
                    raise InputError(
                        f"{c.model}: --prompting {c.prompting} with --chat scores the options after the model's chat "
                        "template, which is not known here; give an HTTP model's template with --chat-template, "
                        "use a local model (gguf:, hf:, embedded-instruct), a generation strategy (e.g. "
                        "--prompting QA), or --no-chat (raw log-prob prompts)")
        except InputError:
            asyncio.run(model.aclose())
            raise
        self.model = model

    def folder_spec(self) -> FolderSpec:
        return FolderSpec(self.config.output_dir, "tom", tag=shard_tag(as_shard(self.config.shard)))

    def config_json(self) -> dict[str, Any]:
        return self.config.to_json()

    def update_meta(self, meta: RunMeta, new: bool) -> None:
        assert self.model is not None
        meta["agent"] = {"name": self.config.model, "policy": self.config.policy, "model": self.model.describe()}

    def streams(self) -> list[Stream[Any]]:
        from stratbench.suites.tom.results import episode_kept, round_order

        c = self.config
        episodes: list[int] = as_shard(c.shard).select(list(range(c.episodes)))
        return [Stream(ROUNDS_FILE, episodes, self.play, unit_key=lambda e: e,
                       record_unit=lambda r: int(r["episode"]), sort_key=round_order,
                       concurrency=1 if self.lm else c.max_concurrency,
                       unit_done=lambda rs: episode_kept(rs, c.rounds), label="episodes", unit_name="episodes",
            record_key=lambda r: (int(r["episode"]), int(r["t"])), record_schema=RoundRecord,
            record_problem=self._record_problem,
            unit_partial=lambda rs: _cut_short(rs, c.rounds))]

    def _record_problem(self, r: Record) -> str | None:
        """A round this run cannot have played (edited by hand): a round, an action or a partner
        state out of range — refused as the file is read, not a crash of the regret computation."""
        from stratbench.suites.tom.games import get_game
        from stratbench.suites.tom.partners import make_partner

        c = self.config
        game = get_game(c.game)
        n_actions, n_states = len(game.actions), make_partner(c.partner, game).n_states
        if not 0 <= r["t"] < c.rounds:
            return f"t {r['t']} is outside 0..{c.rounds - 1}"
        for key, want in (("game", c.game), ("partner", c.partner), ("prompting", c.prompting)):
            if r.get(key) != want:
                return f"{key} {r.get(key)!r}, but this run's is {want!r}"
        for key, n in (("my_action", n_actions), ("partner_action", n_actions), ("prediction", n_actions),
                       ("initial_state", n_states), ("partner_state", n_states)):
            v = r.get(key)
            if isinstance(v, int) and not 0 <= v < n:
                return f"{key} {v} is outside 0..{n - 1}"
        e = r.get("episode")
        if isinstance(e, int) and e >= 0:  # the partner starts where the episode's seed puts it
            import numpy as np

            from stratbench.suites.tom.episodes import PARTNER_STREAM

            starts = self.__dict__.setdefault("_starts", {})
            if e not in starts:
                starts[e] = make_partner(c.partner, game).reset(
                    np.random.default_rng(derive_seed(derive_seed(c.seed, e), *PARTNER_STREAM)))
            s0 = starts[e]
            if r.get("initial_state") != s0:
                return (f"initial_state {r.get('initial_state')!r}, but episode {e}'s seed starts the partner in {s0} "
                        f"(with run.json's seed {c.seed})")
            if r.get("t") == 0 and "partner_state" in r and r["partner_state"] != s0:
                return f"partner_state {r['partner_state']!r} in round 0, but the partner starts in {s0}"
        a, b = r.get("my_action"), r.get("partner_action")
        for key, matrix in (("payoff_me", game.payoff_me), ("payoff_partner", game.payoff_partner)):
            v = r.get(key)
            pays = float(matrix[a, b]) if isinstance(a, int) and isinstance(b, int) else None
            if v is not None and (pays is None or abs(v - pays) > 1e-9):
                return f"{key} {v!r}, but the game pays {pays!r} for actions {a}, {b}"
        for key in ("policy", "tom_policy"):
            pol = r.get(key)
            if pol is not None and not (isinstance(pol, list) and len(pol) == n_actions and all(
                    isinstance(x, (int, float)) and not isinstance(x, bool) and -1e-9 <= x <= 1 + 1e-9 for x in pol)
                    and abs(sum(pol) - 1) <= 1e-6):
                return f"{key} {pol!r} is no distribution over the game's {n_actions} actions"
        pol = r.get("policy")
        if isinstance(pol, list) and isinstance(a, int) and 0 <= a < len(pol) and not pol[a] > 0:
            return f"my_action {a} has probability {pol[a]!r} in the policy it was drawn from"
        for key in ("label_mass", "tom_label_mass"):
            v = r.get(key)
            if v is not None and not (isinstance(v, (int, float)) and 0 <= v <= 1 + 1e-6):
                return f"{key} {v!r} is no probability"
        for key in ("tokens_in", "tokens_out"):
            v = r.get(key)
            if isinstance(v, int) and v < 0:
                return f"{key} {v} is below 0"
        return (self._play_problem(r) or self._state_problem(r) or self._lm_problem(r) or self._gen_problem(r)
                or self._config_problem(r))

    def _config_problem(self, r: Record) -> str | None:
        """What run.json's config says a round holds: a prediction exactly when it predicts (LM
        prompting: its ToM distribution; generation: its ToM calls, asked after the action with
        ``agent_first``, before it otherwise), and no more tries of a call than ``max_tries``. A
        round that disagrees is one another config made (or run.json was edited): a resume would
        go on under the other config beside it."""
        c = self.config
        said = f"run.json's config has predict {str(c.predict).lower()}"
        raw_calls = r.get("calls")
        calls: list[Any] = raw_calls if isinstance(raw_calls, list) else []
        kinds = [x.get("kind") for x in calls if isinstance(x, dict)]
        held: list[str]
        if self.lm:
            held = [k for k in ("tom_policy", "prediction", "tom_label_mass") if k in r]
            if not c.predict and held:
                return f"{held[0]} (a prediction), but {said}"
            if c.predict and r.get("status") == "parsed" and "tom_policy" not in r:
                return f"no prediction (tom_policy), but {said}"
            return None
        social = c.prompting in ("Social", "SocialLM")
        if not c.predict and not social:
            held = [k for k in ("prediction", "tom_status") if k in r] + (["a tom call"] if "tom" in kinds else [])
            if held:
                return f"{held[0]} (a prediction), but {said}"
        if c.predict and not social and r.get("status") == "parsed":
            if "tom" not in kinds:
                return f"no ToM call, but {said}"
            first_tom, last_action = kinds.index("tom"), max((i for i, k in enumerate(kinds) if k == "action"),
                                                            default=-1)
            after = first_tom > last_action
            if after != (c.tom_variant == "agent_first"):
                return (f"its ToM call asked {'after' if after else 'before'} the action, but run.json's config has "
                        f"tom_variant {c.tom_variant!r}")
        for i, call in enumerate(calls):
            n = call.get("attempt") if isinstance(call, dict) else None
            if isinstance(n, int) and not isinstance(n, bool) and not 0 <= n < c.max_tries:
                return f"calls[{i}] is attempt {n}, but run.json's config has max_tries {c.max_tries}"
        return None

    def _state_problem(self, r: Record) -> str | None:
        """The partner's state in round t is where its state machine goes from round t-1's state
        and both moves (round 0's is the seeded start, checked above): checked when the round
        before was read first, as a records file has them."""
        e, t, state = r.get("episode"), r.get("t"), r.get("partner_state")
        if not isinstance(e, int) or not isinstance(t, int):
            return None
        seen: dict[tuple[int, int], tuple[Any, Any, Any]] = self.__dict__.setdefault("_seen_states", {})
        seen[(e, t)] = (state, r.get("my_action"), r.get("partner_action"))
        prev = seen.get((e, t - 1))
        if prev is None or not all(isinstance(x, int) for x in prev) or not isinstance(state, int):
            return None
        partner = self.__dict__.get("_partner")
        if partner is None:
            from stratbench.suites.tom.games import get_game
            from stratbench.suites.tom.partners import make_partner

            partner = self.__dict__["_partner"] = make_partner(self.config.partner, get_game(self.config.game))
        want = partner.update(*prev)
        if state != want:
            return f"partner_state {state}, but the partner moves to {want} after round {t - 1}'s moves"
        return None

    def _play_problem(self, r: Record) -> str | None:
        """A round is played to its payoffs (status parsed) or it is the round that stopped its
        episode, where the partner never acted: a stopped round with the partner's move or payoffs,
        or a played round without them, is not what the run wrote."""
        played = ("my_action", "partner_action", "payoff_me", "payoff_partner")
        if r.get("status") == "parsed":
            missing = [k for k in played if r.get(k) is None]
            if missing:
                return f"status 'parsed', but it has no {', '.join(missing)}"
            return None
        there = [k for k in played[1:] if r.get(k) is not None]
        if there:
            return f"status {r.get('status')!r} (the round that stopped its episode), but it has {', '.join(there)}"
        return None

    def _lm_problem(self, r: Record) -> str | None:
        """LM prompting: the action is drawn from the round's policy with the round's seed, and the
        prediction is the ToM distribution's most likely action; both are drawn again here, so an
        edited action, prediction or policy is refused (as a resume would play it otherwise)."""
        pol, tom, a = r.get("policy"), r.get("tom_policy"), r.get("my_action")
        e, t = r.get("episode"), r.get("t")
        if self.lm and isinstance(pol, list) and isinstance(a, int) and isinstance(e, int) and isinstance(t, int):
            from stratbench.players import draw

            try:
                drawn = draw(pol, derive_seed(derive_seed(self.config.seed, e), t))
            except ValueError:  # probabilities that do not sum to 1 closely enough to draw from
                return f"policy {pol!r} is no distribution the action could be drawn from"
            if drawn != a:
                return (f"my_action {a}, but round {t}'s seed draws {drawn} from its policy (with run.json's seed "
                        f"{self.config.seed})")
        if self.lm and "tom_status" in r:  # (generation strategies' field: LM prompting's prediction is scored)
            return f"tom_status {r['tom_status']!r} on an LM-prompting round, which has none"
        pred = r.get("prediction")
        if self.lm and isinstance(tom, list) and tom and isinstance(pred, int) and 0 <= pred < len(tom):
            if tom[pred] < max(tom) * (1 - 1e-9):
                return f"prediction {pred}, but its tom_policy's most likely action is {tom.index(max(tom))}"
        elif self.lm and isinstance(tom, list) and pred is None and r.get("status") == "parsed":
            return "prediction null, but the round has a tom_policy"
        return None

    def _gen_problem(self, r: Record) -> str | None:
        """Generation strategies: every answer read as parsed is read again from its text as the
        episode read it, and the round's action and prediction are the last such answers (a
        SocialLM prediction the scored labels' most likely one)."""
        calls = r.get("calls")
        if self.lm or not isinstance(calls, list):
            return None
        from stratbench.suites.tom.games import get_game
        from stratbench.suites.tom.gen_episodes import read_call_again
        from stratbench.suites.tom.gen_prompts import GenPrompts

        s = self.config.gen_settings()
        labels = self.__dict__.get("_labels")
        if labels is None:
            labels = self.__dict__["_labels"] = tuple(
                GenPrompts(get_game(self.config.game), s.label_set, self.config.rounds, payoffs=s.payoffs,
                           history=s.history).labels)
        answers: dict[str, int] = {}
        for i, call in enumerate(calls):
            kind = call.get("kind") if isinstance(call, dict) else None
            if kind not in ("action", "tom") or call.get("status") != "parsed":
                continue
            if "logprobs" in call:  # SocialLM's scored prediction: the labels' most likely one
                lps = [x if isinstance(x, (int, float)) else float("-inf") for x in call["logprobs"]]
                if lps:
                    answers[kind] = max(range(len(lps)), key=lambda k: (lps[k], -k))
                continue
            value = read_call_again(s, labels, call)
            if value is None:
                return f"calls[{i}] ({kind}) is 'parsed', but its text gives no answer when read again"
            answers[kind] = value
        for key, kind in (("my_action", "action"), ("prediction", "tom")):
            v = r.get(key)
            if isinstance(v, int) and kind in answers and v != answers[kind]:
                return f"{key} {v}, but its {kind} call's answer reads {answers[kind]}"
            if r.get("status") == "parsed" and key == "my_action" and "action" not in answers:
                return "status 'parsed', but no action call of the round was parsed"
        return None

    async def play(self, e: int) -> list[Record]:
        """Episode ``e`` (seed ``derive_seed(seed, e)``): its round records, up to the round that
        stopped it."""
        c = self.config
        assert self.model is not None
        seed = derive_seed(c.seed, e)
        if self.lm:
            from stratbench.suites.tom.episodes import arun_lm_episode

            ep = await arun_lm_episode(self.model, c.game, c.partner, c.rounds, seed, label_set=c.label_set,
                                       predict=c.predict, tom_variant=c.tom_variant, keep_prompts=c.keep_prompts,
                                       history=c.history, payoffs=c.payoffs, chat=bool(c.chat))
        else:
            from stratbench.suites.tom.gen_episodes import arun_gen_episode

            ep = await arun_gen_episode(self.model, c.game, c.partner, c.rounds, seed, c.gen_settings())
        return [cast(Record, self.round_record(e, ep["initial_state"], r)) for r in ep["records"]]

    def round_record(self, e: int, initial_state: int, r: dict[str, Any]) -> RoundRecord:
        c = self.config
        return cast(RoundRecord, {"episode": e, "game": c.game, "partner": c.partner, "prompting": c.prompting,
                                  "initial_state": initial_state, **r})

    def summarise(self, folder: Path, records: dict[str, list[Record]]) -> Outcome:
        """summary.json and regret_curve.png from the round records (a run's, or its shards')."""
        from stratbench.suites.tom.plots import regret_curves_plot
        from stratbench.suites.tom.results import summarize_rounds

        cfg = self.config_json()
        summary, curve = summarize_rounds(records[ROUNDS_FILE], cfg)
        shard = as_shard(self.config.shard)
        if not shard.whole:
            summary["shard"] = str(shard)
        write_json_atomic(folder / "summary.json", summary)
        name = f"{cfg['game']}/{cfg['partner']} ({cfg['prompting']})"
        write_bytes_atomic(folder / "regret_curve.png",
                           regret_curves_plot({name: curve} if curve else {}, f"{cfg['model']}: regret per step"))
        return Outcome({"": dict(summary)}, summary["n_error_episodes"], totals={
            "episodes": summary["n_episodes_run"], "complete_episodes": summary["n_episodes"],
            "parse_failed_episodes": summary["n_parse_failed_episodes"],
            "tokens_evaluated": summary["tokens_evaluated"], "tokens_generated": summary["tokens_generated"]})

    def usage(self) -> dict[str, Any]:
        return self.model.usage.as_dict() if self.model is not None else {"calls": 0}

    async def aclose(self) -> None:
        if self.model is not None:
            await self.model.aclose()


def run_tom_model(config: TomRunConfig, progress: Progress | None = None,
                  resume_dir: str | Path | None = None) -> RunResult:
    """Run (or, with ``resume_dir``, finish) `tom run`; the result's summary is summary.json's."""
    return execute(TomRunPlan(config), progress, resume_dir)


def merge_tom_runs(folders: list[Path], out: Path) -> Outcome:
    """`stratbench merge` of `tom run` shards (already checked to be shards 1..n of one config):
    every episode exactly once, in the unsharded order, summarised as the unsharded run."""
    saved = read_run_json(folders[0])["config"]
    return merge_streams(TomRunPlan(rebuild_config(TomRunConfig, saved, shard=None)), folders, out)


def tom_run_plan(folder: Path) -> TomRunPlan:
    """The `tom run` (or shard) in ``folder`` as its run.json plans it, no model opened: its
    streams check the rounds read back (compare, the report)."""
    return TomRunPlan(rebuild_config(TomRunConfig, read_run_json(folder)["config"]).resolve())


def _cut_short(rs: list[Record], rounds: int) -> bool:
    """An episode whose rounds are not 0, 1, … in a row, or end before its last round without the
    failure that stopped it: records lost after the run finished."""
    from stratbench.suites.tom.results import episode_status

    ts = sorted(int(r["t"]) for r in rs)
    return ts != list(range(len(ts))) or episode_status(sorted(rs, key=lambda r: int(r["t"])), rounds) == "partial"
