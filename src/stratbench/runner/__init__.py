"""Suite-independent run machinery: streaming JSONL, bounded async worker pools, run folders with
metadata, and progress display."""

from stratbench.runner.jsonl import JsonlWriter, read_jsonl, rewrite_sorted
from stratbench.runner.pool import run_pool
from stratbench.runner.folders import RunFolder, create_run_folder, run_metadata

__all__ = [
    "JsonlWriter",
    "read_jsonl",
    "rewrite_sorted",
    "run_pool",
    "RunFolder",
    "create_run_folder",
    "run_metadata",
]
