"""Options shared by several commands, declared once: the same name, type and meaning everywhere
(DEVELOPERS conventions: `--model`, `--base-url`, `--policy`, `--seed`, `--output-dir`,
`--resume`, `--no-cache`, `--max-concurrency`, `--shard`, `--quiet`, ...). A command gives each
its own default in its signature (e.g. CHBench plays 4 matches at once, other suites make 8 calls),
so per-suite defaults stay where the command is."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

BaseUrl = Annotated[Optional[str], typer.Option(help="Base URL of an OpenAI-compatible server.")]
MaxConcurrency = Annotated[int, typer.Option(help="Concurrent model calls.")]
NoCache = Annotated[bool, typer.Option(help="Bypass the response cache.")]
OutputDir = Annotated[str, typer.Option(help="Where result folders are created.")]
Resume = Annotated[Optional[str], typer.Option(help="Finish an interrupted run in this folder.")]
Shard = Annotated[Optional[str], typer.Option(
    help="Run only shard i/n of the work (needs --seed where it draws anything); combine with `stratbench merge`.")]
Quiet = Annotated[bool, typer.Option(help="No progress bar or tables; print the result folder.")]
Policy = Annotated[Optional[str], typer.Option(help="logprob (exact, default where available) or sample.")]
Temperature = Annotated[float, typer.Option(help="Sampling temperature of generated answers.")]
MaxTokens = Annotated[int, typer.Option(help="Generation budget of generated answers.")]
Chat = Annotated[bool, typer.Option(help="Send prompts as chat messages (chat endpoints).")]
Seed = Annotated[Optional[int], typer.Option(help="Seed (random if omitted; recorded in run.json).")]
# HTTP backends: how long one request may take, how often a failed one is retried, and how long to
# wait for a server that is down (restarting) before a call counts as failed
Timeout = Annotated[float, typer.Option(help="Seconds one HTTP request may take before it is retried.")]
Retries = Annotated[int, typer.Option(help="Retries of a failed HTTP request (429, 5xx, timeouts, dropped connections).")]
WaitForServer = Annotated[float, typer.Option(
    help="Seconds to wait for an unreachable server (e.g. restarting) before its calls fail; 0: no extra wait.")]
ChatTemplate = Annotated[Optional[str], typer.Option(
    help="HTTP models: the model's chat template (its GGUF, tokenizer_config.json or .jinja) for exact "
         "choice scoring of chat prompts over the completions endpoint; a GGUF also gives its tokenizer, "
         "which scores multi-token answers by a fast top-k walk instead of one echo request each.")]
ReasoningEffort = Annotated[Optional[str], typer.Option(
    help="HTTP reasoning models: none, minimal, low, medium or high; sent as OpenAI's reasoning_effort "
         "(chat endpoints), as a thinking budget to Anthropic and Gemini (1,024 to 24,576 tokens, on top of "
         "--max-tokens). Default: the provider's own.")]
ThinkTags = Annotated[Optional[str], typer.Option(
    help="The tags an open reasoning model writes its thinking between, \"OPEN,CLOSE\" (default "
         "\"<think>,</think>\"): kept in the record's reasoning, never parsed as the answer.")]
FixedSeed = Annotated[int, typer.Option(help="Seed (recorded in run.json; unit k always plays with a seed derived from it and k).")]


def group(help: str) -> typer.Typer:
    """A command group with the project's settings (no completion, no rich tracebacks)."""
    return typer.Typer(add_completion=False, pretty_exceptions_enable=False, rich_markup_mode=None, help=help)


def slug(spec: str) -> str:
    """A model spec as a folder-name part."""
    import re

    return re.sub(r"[^A-Za-z0-9._-]+", "-", spec).strip("-")[:60]


def csv_list(values: Optional[list[str]]) -> list[str]:
    """Repeated options and comma lists, flattened."""
    return [v.strip() for item in (values or []) for v in item.split(",") if v.strip()]
