"""Suite-independent run machinery (core): the run lifecycle every suite uses (``lifecycle``:
validate → folder → run.json → streamed records → summary → totals), the written schema of run.json
(``schema``), streaming JSONL (``jsonl``), bounded async worker pools (``pool``), run folders and
their metadata (``folders``), ``--shard i/n`` (``shard``) and the suite-independent half of merging
shards (``merge``). It imports only errors, seeding and other core modules — never a suite."""

from stratbench.runner.folders import RunFolder, create_run_folder, run_metadata
from stratbench.runner.jsonl import JsonlWriter, read_jsonl
from stratbench.runner.pool import run_pool

__all__ = [
    "JsonlWriter",
    "read_jsonl",
    "run_pool",
    "RunFolder",
    "create_run_folder",
    "run_metadata",
]
