"""Record the golden fingerprints (only when a behaviour change is intended and explained):

    .venv/bin/python tests/golden/regen.py [SCENARIO ...]

Besides the scenarios, "cli_spec" (the CLI's commands, flags and defaults: a new suite's command
appears there) and "cache_keys" are written when named, or when no name is given.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parents[1] / "helpers")]

from cli_spec import cli_spec  # noqa: E402
from fake_openai_server import FakeOpenAIServer  # noqa: E402
from scenarios import DATA, SCENARIOS, compare_rules, run_scenario  # noqa: E402
from test_cli_spec import cache_keys  # noqa: E402


def write_specs(names: list[str]) -> None:
    """The CLI spec and the cache keys, as test_cli_spec.py reads them."""
    for name, make in (("cli_spec", cli_spec), ("cache_keys", cache_keys)):
        if not names or name in names:
            (DATA / f"{name}.json").write_text(json.dumps(make(), indent=1, sort_keys=True) + "\n")
            print(name)


def main(names: list[str]) -> None:
    DATA.mkdir(exist_ok=True)
    write_specs(names)
    scenarios = [n for n in names if n not in ("cli_spec", "cache_keys")]
    if names and not scenarios:
        return
    names = scenarios
    with tempfile.TemporaryDirectory() as tmp, FakeOpenAIServer() as server:
        for sc in SCENARIOS:
            if names and sc.name not in names:
                continue
            fp = run_scenario(sc, Path(tmp) / sc.name, Path(tmp) / f"cache_{sc.name}",
                              server.base_url if sc.server else None)
            fp = {"compare": compare_rules(sc.tol), **fp}
            (DATA / f"{sc.name}.json").write_text(json.dumps(fp, indent=1, sort_keys=True) + "\n")
            print(sc.name, len(fp["files"]), "files", [s["rc"] for s in fp["steps"]])


if __name__ == "__main__":
    main(sys.argv[1:])
