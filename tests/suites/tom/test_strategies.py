"""Strategy names and template parsing of generated answers."""

from __future__ import annotations

import asyncio

import pytest

from stratbench.errors import InputError
from stratbench.suites.tom.gen_episodes import (
    arun_gen_episode,
)
from stratbench.suites.tom.strategies import (
    extract_field,
    normalize_prompting,
    parse_option,
)


def play(model, game, partner, T, settings, seed=1):
    return asyncio.run(arun_gen_episode(model, game, partner, T, seed, settings))


def test_template_parsing():
    L = ("J", "F")
    assert parse_option("Option: F", L).action == 1
    assert parse_option("Thoughts: they always play J, so J.\n\n**Option:** J", L).action == 0
    assert parse_option("Option: F\n\nYou are playing a game... Option: J", L).action == 1  # first answer line
    assert parse_option("Option:\n\nF", L).action == 1
    for bad in ("Option: <J or F>", "", "Option: Q", "Option:", "Option:\nThoughts: J", "I like both"):
        r = parse_option(bad, L)
        assert r.action is None and r.error and r.parse is None
    assert "template" in parse_option("I like both", L).error
    # no 'Option:' line but an answer statement in the text: read flexibly (strict-match fails it)
    r = parse_option("I choose J", L)
    assert r.action == 0 and r.parse == "flexible"
    text = "Plans: stay on J\nfor now\n\nInsights: copies me\n\nOption: J"
    assert extract_field(text, "plans") == "stay on J\nfor now"
    assert extract_field(text, "insights") == "copies me" and extract_field(text, "plan") is None
    assert extract_field("Plan: play F next", "plan") == "play F next"
    assert normalize_prompting("plans+insights") == "PlansInsights" and normalize_prompting("Oracle+Max") == "OracleMax"
    with pytest.raises(InputError, match="known"):
        normalize_prompting("Telepathy")
