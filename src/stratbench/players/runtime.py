"""How a suite's model players are run, as opposed to what they are asked: one dataclass every
suite config inherits.

Which server (``base_url``), how long a request may take and how often it is retried, how long to
wait for a server that is down, how many calls are in flight, whether the response cache answers,
the chat template of an HTTP model, the sampling temperature, a reasoning model's effort and
think tags are the same flags with the same
meaning in every suite. Declared here once, each has one rule (`stratbench.checks.RULES`, by field
name), one spelling in run.json's config and one mapping onto the backends' `ModelOptions`. A
suite that wants another default redeclares the field (CHBench runs 4 calls at once, ToM samples
at 0.7).

A resumed run takes ``base_url``, ``timeout``, ``retries``, ``wait_for_server``, ``max_concurrency``
and ``no_cache`` from the resuming command when given there (`runner.lifecycle.RUNTIME_KEYS`): they
say how the run is carried out, never what a record holds. ``temperature``, ``chat_template``,
``reasoning_effort`` and ``think_tags`` change the answers, so a resumed run keeps its saved ones.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    from stratbench.models import ModelOptions
    from stratbench.models.base import LanguageModel


#: fields run.json records only when set: a run without them writes the run.json it wrote before
#: they existed (and so the cache identity and goldens of such a run stay what they were)
WHEN_SET = ("chat_template", "reasoning_effort", "think_tags")

#: the fields a resumed run takes from the resuming command (runner.lifecycle.RUNTIME_KEYS, which
#: also names the Nash-gap suite's --parallel/--num-workers)
RESUMED_FROM_COMMAND = ("base_url", "timeout", "retries", "wait_for_server", "max_concurrency", "no_cache")


@dataclass
class RuntimeOptions:
    """The flags every suite config shares for running its model players (module docstring)."""

    #: fields run.json records only when set (a suite adds its own optional fields)
    WHEN_SET: ClassVar[tuple[str, ...]] = WHEN_SET

    base_url: str | None = None  # --base-url: an HTTP model's server (presets have their own)
    timeout: float = 60.0  # --timeout: seconds one HTTP request may take
    retries: int = 4  # --retries: of a failed HTTP request
    wait_for_server: float = 0.0  # --wait-for-server: seconds to wait for a server that is down
    # --chat-template, HTTP models: the model's GGUF / tokenizer_config.json / .jinja, for exact scoring
    # of the chat prompt over the completions endpoint. Saved with the run (a resumed run keeps it);
    # run.json records it only when set
    chat_template: str | None = None
    max_concurrency: int = 8  # --max-concurrency: calls in flight (results never depend on it)
    no_cache: bool = False  # --no-cache: neither read nor write the response cache
    temperature: float = 1.0  # --temperature: sampled answers (exact policies do not sample)
    # --reasoning-effort, HTTP reasoning models: OpenAI's reasoning_effort as sent; Anthropic's and
    # Gemini's thinking budgets mapped from it (stratbench.models.reasoning.THINKING_BUDGETS).
    # Changes the answers: a resumed run keeps its saved one
    reasoning_effort: str | None = None
    # --think-tags "OPEN,CLOSE": the tags an open reasoning model writes its thinking between
    # (default <think>,</think>); the thinking is kept apart from the answer the parsers read
    think_tags: str | None = None

    def to_json(self) -> dict[str, Any]:
        """The config as run.json records it: every field, those of `WHEN_SET` only when given
        (run.json stays as it was before the flags existed)."""
        from dataclasses import asdict

        return {k: v for k, v in asdict(self).items() if k not in self.WHEN_SET or v is not None}

    def check_runtime(self) -> None:
        """One line naming the flag for a bad value of the flags a resumed run takes from the command
        that resumes it (the rest of that command's config is the saved run's, checked as read)."""
        from stratbench.checks import check_config

        check_config(self, only=RESUMED_FROM_COMMAND)

    def check_http_options(self, specs: list[str]) -> None:
        """The flags only HTTP models take (--base-url, --chat-template, --reasoning-effort) given to a
        run whose players ``specs`` hold none: one line before anything is opened or written."""
        from stratbench.models import check_base_url_applies, check_chat_template, check_reasoning_effort

        check_base_url_applies(self.base_url, specs)
        check_chat_template(self.chat_template, specs)
        check_reasoning_effort(self.reasoning_effort, specs)

    def model_options(self, chat: bool | None, **extra: Any) -> ModelOptions:
        """The backends' options for this run's models: ``chat`` (True: conversations; None: the
        provider's default endpoint) and ``extra`` (prefix reuse, or another chat template for a
        model that takes none) on top of the shared flags."""
        from stratbench.models import ModelOptions

        opts: dict[str, Any] = dict(base_url=self.base_url, max_concurrency=self.max_concurrency, chat=chat,
                                    timeout_s=self.timeout, max_retries=self.retries,
                                    wait_for_server_s=self.wait_for_server, chat_template=self.chat_template,
                                    temperature=self.temperature, reasoning_effort=self.reasoning_effort,
                                    think_tags=self.think_tags)
        return ModelOptions(**{**opts, **extra})

    def open_model(self, spec: str, chat: bool | None, **extra: Any) -> LanguageModel:
        """The model ``spec`` opened with these options, behind the response cache unless --no-cache."""
        from stratbench.models import open_model

        return open_model(spec, self.model_options(chat, **extra), no_cache=self.no_cache)
