"""Exact choice scoring for any label set (`stratbench.models.labels`): labels that begin other
labels are scored as whole answers, so a policy's probabilities never overlap and the label mass
never exceeds 1 — checked on a deterministic model of whole answers (any label set, as a property),
on the embedded model (11, 101 and 1,000 actions) and refused up front where a backend cannot."""

from __future__ import annotations

import asyncio
import json
import math
from typing import Any

import numpy as np
import pytest
from fake_openai_server import FakeOpenAIServer
from hypothesis import given, settings
from hypothesis import strategies as st

from stratbench.errors import InputError
from stratbench.models.base import LanguageModel, ScoreResult, ends_answer
from stratbench.models.labels import LabelPolicy, check_closed, choice_request, label_policy, prefix_free


class Answers(LanguageModel):
    """A deterministic model of whole answers: each answer text has a fixed probability and ends
    the reply. P(continuation c) is the mass of the answers that begin with c; closed, of those
    that are c or continue it with a character that ends an answer."""

    supports_closed_scoring = True

    def __init__(self, answers: dict[str, float], closed_ok: bool = True) -> None:
        super().__init__()
        self.spec = "answers"
        self.answers = answers
        self.supports_closed_scoring = closed_ok

    def p(self, c: str, closed: bool) -> float:
        return sum(w for t, w in self.answers.items()
                   if t.startswith(c) and (not closed or ends_answer(t[len(c):])))

    async def score(self, requests: Any) -> list[ScoreResult]:
        out = []
        for r in requests:
            ps = [self.p(c, r.closed) for c in r.continuations]
            out.append(ScoreResult([math.log(p) if p > 0 else -math.inf for p in ps], [1] * len(ps)))
        return out

    async def generate(self, requests: Any) -> Any:  # pragma: no cover - scoring only
        raise NotImplementedError


def _score(model: LanguageModel, labels: list[str]) -> tuple[Any, Any]:
    req = choice_request("Answer: ", labels)
    (res,) = asyncio.run(model.score([req]))
    return req, res


def test_prefix_free() -> None:
    assert prefix_free(["0", "1", "2"]) and prefix_free([" 1", " 2"]) and prefix_free(["A1]", "A2]"])
    assert not prefix_free([str(i) for i in range(11)])  # "1" begins "10"
    assert not prefix_free(["A", "AB"]) and not prefix_free(["x", "x"])
    assert prefix_free([]) and prefix_free(["only"])


def test_overlapping_labels_are_scored_as_whole_answers() -> None:
    model = Answers({"1": 0.3, "10": 0.2, "1.": 0.1, "100": 0.15, "2 and": 0.05, "7": 0.2})
    labels = [str(i) for i in range(11)]
    req, res = _score(model, labels)
    assert req.closed
    pol = label_policy(res.logprobs)
    assert isinstance(pol, LabelPolicy)
    # "1" is the answers "1" and "1." (0.4); "10" is "10" alone: "100" is neither; "2" is "2 and"
    assert pol.mass == pytest.approx(0.4 + 0.2 + 0.05 + 0.2)
    assert pol.probs[1] == pytest.approx(0.4 / 0.85) and pol.probs[10] == pytest.approx(0.2 / 0.85)
    # scored as plain continuations, "1" would also hold "10" and "100": more than all the mass
    plain = [model.p(x, False) for x in labels]
    assert sum(plain) > 1.0


def test_prefix_free_labels_keep_plain_scoring() -> None:
    req = choice_request("Answer: ", ["0", "1", "2"])
    assert not req.closed and req.continuations == ("0", "1", "2")


_alphabet = st.sampled_from(list("0123AB"))
_text = st.text(alphabet=st.sampled_from(list("0123AB .,\n")), min_size=1, max_size=4)


@given(st.lists(st.text(alphabet=_alphabet, min_size=1, max_size=3), min_size=1, max_size=12, unique=True),
       st.dictionaries(_text, st.floats(0.01, 1.0), min_size=1, max_size=12))
@settings(max_examples=300, deadline=None)
def test_any_label_set_gives_a_policy_with_mass_at_most_one(labels, weights) -> None:
    total = sum(weights.values())
    model = Answers({t: w / total for t, w in weights.items()})
    req, res = _score(model, labels)
    assert req.closed == (not prefix_free(labels))
    pol = label_policy(res.logprobs)
    if isinstance(pol, str):  # the model gives none of the labels any probability
        assert pol == "no legal label has finite log-probability"
        assert all(lp == -math.inf for lp in res.logprobs)
        return
    assert pol.mass <= 1.0 + 1e-12
    assert sum(pol.probs) == pytest.approx(1.0) and min(pol.probs) >= 0.0
    if req.closed:  # each label's probability is exactly that answer's
        exact = [sum(w for t, w in model.answers.items() if t == x or (t.startswith(x) and not t[len(x)].isalnum()))
                 for x in labels]
        assert np.exp(res.logprobs) == pytest.approx(exact)


def test_label_policy_refuses_what_is_not_a_probability() -> None:
    assert label_policy([float("nan"), -1.0]) == "a label's log-probability is not a number"
    assert "above 0" in label_policy([0.5, -1.0])  # type: ignore[operator]
    assert "sum to" in label_policy([-0.1, -0.2])  # type: ignore[operator]
    assert label_policy([-math.inf, -math.inf]) == "no legal label has finite log-probability"
    pol = label_policy([-math.inf, math.log(0.25), math.log(0.25)])
    assert isinstance(pol, LabelPolicy) and pol.probs == [0.0, 0.5, 0.5] and pol.mass == pytest.approx(0.5)


def test_a_backend_without_closed_scoring_is_refused_before_the_run() -> None:
    model = Answers({"1": 1.0}, closed_ok=False)
    check_closed(model, [["0", "1", "2"]], "a game")  # prefix-free: nothing to refuse
    with pytest.raises(InputError) as e:
        check_closed(model, [["0", "1"], [str(i) for i in range(11)]], "a game of this run")
    assert str(e.value).startswith("answers: a game of this run has labels that begin other labels ('1' begins '10')")
    assert "--policy sample" in str(e.value) and "\n" not in str(e.value)


def test_nashgap_over_http_with_eleven_actions_is_refused_in_one_line(tmp_path, cli) -> None:
    with FakeOpenAIServer() as server:
        r = cli("nashgap", "--model", "openai-compatible:fake", "--base-url", server.base_url, "--num-rows", "11",
                "--num-cols", "2", "--num-games", "1", "--seed", "0", "--output-dir", str(tmp_path / "out"))
        ok = cli("nashgap", "--model", "openai-compatible:fake", "--base-url", server.base_url, "--num-rows", "11",
                 "--num-cols", "2", "--num-games", "1", "--seed", "0", "--policy", "sample", "--max-tokens", "8",
                 "--output-dir", str(tmp_path / "sampled"))
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert "'1' begins '10'" in r.stderr and "--policy sample" in r.stderr and "Traceback" not in r.stderr
    assert not (tmp_path / "out").exists()
    assert ok.returncode in (0, 1), ok.stderr  # sampling needs no closed scoring


# -- the embedded model ----------------------------------------------------------------------------

llama_cpp = pytest.importorskip("llama_cpp")


@pytest.fixture(scope="module")
def embedded():
    from stratbench.models.llama import load_embedded

    m = load_embedded()
    yield m
    asyncio.run(m.aclose())


@pytest.mark.parametrize("n", [101, 1000])
def test_many_labels_on_the_embedded_model(embedded, n) -> None:
    labels = [str(i) for i in range(n)]
    req = choice_request(f"Pick a whole number from 0 to {n - 1}.\nAnswer: I pick ", labels)
    (res,) = asyncio.run(embedded.score([req]))
    assert req.closed and res.ok, res.error
    pol = label_policy(res.logprobs)
    assert isinstance(pol, LabelPolicy)
    assert 0.5 < pol.mass <= 1.0 + 1e-9 and sum(pol.probs) == pytest.approx(1.0)
    # a label's whole-answer probability is below its plain one (which also counts longer answers)
    (plain,) = asyncio.run(embedded.score([choice_request("Pick a whole number from 0 to "
                                                          f"{n - 1}.\nAnswer: I pick ", ["1", "2"])]))
    assert res.logprobs[1] < plain.logprobs[0] and res.logprobs[2] < plain.logprobs[1]


@pytest.mark.parametrize("rows,cols", [(11, 2), (12, 12), (101, 2)])
def test_nashgap_with_many_actions_on_the_embedded_model(tmp_path, rows, cols) -> None:
    from stratbench.runner.jsonl import read_jsonl
    from stratbench.suites.nashgap.run import NashgapConfig, run_nashgap

    res = run_nashgap(NashgapConfig(model="embedded", num_rows=rows, num_cols=cols, num_games=1, seed=0,
                                    order_rotations=1, num_trials=1, output_dir=str(tmp_path)))
    (rec,) = read_jsonl(next(res.folder.glob("trials*.jsonl")))
    assert rec["status"] == "parsed" and len(rec["policy"]) == rows
    assert rec["label_mass"] <= 1.0 + 1e-9 and sum(rec["policy"]) == pytest.approx(1.0)
    assert np.exp(rec["logprobs"]).sum() == pytest.approx(rec["label_mass"])
    summary = json.loads((res.folder / "summary.json").read_text())
    assert summary["mean_label_mass"] <= 1.0 + 1e-9
