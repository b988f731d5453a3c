"""The runtime options every suite config shares: declared once, mapped onto the backends' options
once, and the resume rules agree with the lifecycle's."""

from __future__ import annotations

import dataclasses

import pytest

from stratbench.errors import InputError
from stratbench.players.runtime import RESUMED_FROM_COMMAND, RuntimeOptions
from stratbench.runner.lifecycle import RUNTIME_KEYS
from stratbench.suites.chbench.run import ChbenchConfig
from stratbench.suites.nashgap.config import NashgapConfig
from stratbench.suites.tmgbench.complex_run import ComplexConfig
from stratbench.suites.tmgbench.config import TmgbenchConfig
from stratbench.suites.tmgbench.stories_gen import StoryGenConfig
from stratbench.suites.tom.model_run import TomRunConfig

CONFIGS = [NashgapConfig, TmgbenchConfig, ComplexConfig, StoryGenConfig, ChbenchConfig, TomRunConfig]
SHARED = {f.name for f in dataclasses.fields(RuntimeOptions)}


@pytest.mark.parametrize("cls", CONFIGS, ids=lambda c: c.__name__)
def test_every_model_calling_config_takes_the_shared_options(cls):
    assert issubclass(cls, RuntimeOptions)
    assert SHARED <= {f.name for f in dataclasses.fields(cls)}


def test_suites_keep_their_own_defaults():
    assert ChbenchConfig().max_concurrency == 4 and TomRunConfig().temperature == 0.7
    assert NashgapConfig().max_concurrency == 8 and NashgapConfig().temperature == 1.0


def test_model_options_carry_every_flag_and_the_extras_win():
    c = ChbenchConfig(base_url="http://h/v1", timeout=3.5, retries=2, wait_for_server=9.0, chat_template="t.jinja",
                      max_concurrency=5, temperature=0.3)
    o = c.model_options(chat=True, prefix_reuse=True, chat_template=None)
    assert (o.base_url, o.timeout_s, o.max_retries, o.wait_for_server_s, o.max_concurrency, o.temperature, o.chat,
            o.prefix_reuse, o.chat_template) == ("http://h/v1", 3.5, 2, 9.0, 5, 0.3, True, True, None)


def test_run_json_records_a_chat_template_only_when_given():
    assert "chat_template" not in NashgapConfig().to_json()
    assert NashgapConfig(chat_template="x.gguf").to_json()["chat_template"] == "x.gguf"


def test_the_resume_rules_agree_with_the_lifecycles():
    assert set(RESUMED_FROM_COMMAND) <= SHARED
    assert set(RUNTIME_KEYS) - set(RESUMED_FROM_COMMAND) == {"parallel", "num_workers"}  # Nash gap's own


@pytest.mark.parametrize("field,value,why", [
    ("timeout", 0, "--timeout must be at least 0.001 (got 0)"),
    ("retries", -1, "--retries must be at least 0 (got -1)"),
    ("max_concurrency", 0, "--max-concurrency must be at least 1 (got 0)"),
    ("wait_for_server", float("nan"), "--wait-for-server must be a finite number (got nan)"),
])
def test_a_resuming_commands_runtime_flags_are_checked(field, value, why):
    with pytest.raises(InputError, match="^" + why.replace("(", r"\(").replace(")", r"\)") + "$"):
        TmgbenchConfig(**{field: value}).check_runtime()
