"""Story generation: only stories whose payoff matrix is their game's are accepted."""

from __future__ import annotations

from pathlib import Path

from fake_openai_server import FakeOpenAIServer

FIXTURES = Path(__file__).parents[2] / "data" / "tmgbench_stories"


def test_story_generation_accepts_only_matching_stories(tmp_path):
    from stratbench.suites.tmgbench.stories_gen import StoryGenConfig, generate_stories

    story_111 = (FIXTURES / "111_0.txt").read_text()
    with FakeOpenAIServer(canned_text=story_111) as server:
        res = generate_stories(StoryGenConfig(
            model="openai-compatible:fake", base_url=server.base_url, games="111,122", variants=1,
            max_attempts=2, seed=1, no_cache=True, output_dir=str(tmp_path)))
    s = res.summary
    assert s["n_accepted"] == 1 and s["attempts"] == 3
    assert s["attempt_status_counts"]["rejected"] == 2
    assert (Path(s["stories_dir"]) / "111_0.txt").exists()
    assert not (Path(s["stories_dir"]) / "122_0.txt").exists()
    # the accepted file is a valid story of game 111
    from stratbench.suites.tmgbench.games import game_by_id
    from stratbench.suites.tmgbench.stories import load_story, verify_story

    g = game_by_id("111")
    assert verify_story(load_story(Path(s["stories_dir"]) / "111_0.txt"), g.payoff_A, g.payoff_B) == []


def test_story_generation_records_in_game_order_and_resumes(tmp_path):
    import json

    import pytest

    from stratbench.errors import InputError
    from stratbench.runner.jsonl import read_jsonl
    from stratbench.suites.tmgbench.stories_gen import StoryGenConfig, generate_stories

    with FakeOpenAIServer(canned_text="not a story") as server:
        res = generate_stories(StoryGenConfig(
            model="openai-compatible:fake", base_url=server.base_url, games="444,111", variants=2,
            max_attempts=2, seed=1, no_cache=True, max_concurrency=4, output_dir=str(tmp_path)))
    recs = read_jsonl(res.folder / "generation.jsonl")
    assert [(r["game_id"], r["variant"], r["attempt"]) for r in recs] == [
        (g, k, a) for g in ("444", "111") for k in (0, 1) for a in (0, 1)]
    assert all(r["status"] == "parse_failed" for r in recs) and res.summary["n_accepted"] == 0
    meta = json.loads((res.folder / "run.json").read_text())
    assert meta["suite"] == "tmgbench-stories" and meta["kind"] == "stories"
    assert meta["totals"]["model_calls"] == 8 and meta["totals"]["records"] == 8 and meta["totals"]["errors"] == 0
    # an interrupted generation is finished in place: only the stories it lacks are asked for
    from stratbench.runner.jsonl import write_jsonl_atomic

    write_jsonl_atomic(res.folder / "generation.jsonl", recs[:4])  # game 111's stories lost
    (res.folder / "run.json").write_text(json.dumps({**meta, "status": "running"}))
    with FakeOpenAIServer(canned_text="not a story") as server:
        done = generate_stories(StoryGenConfig(base_url=server.base_url), resume_dir=res.folder)
    assert read_jsonl(done.folder / "generation.jsonl") == recs
    assert json.loads((done.folder / "run.json").read_text())["totals"]["model_calls"] == 8 + 4
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputError, match="not a result folder"):
        generate_stories(StoryGenConfig(), resume_dir=tmp_path / "empty")
