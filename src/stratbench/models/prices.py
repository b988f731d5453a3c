"""The shipped price table: list prices of the papers' hosted models, in USD per million tokens, each
with the date it was read and where (the provider's pricing page). Prices change; the dry run
prints the date next to every price, and ``--price-table FILE`` (JSON ``{spec: {"input_per_million":
$, "output_per_million": $}}``) overrides or adds entries. Models that run here cost nothing; a
model missing from both tables has no price, which the dry run says instead of guessing one.

Input prices are the providers' standard (uncached) prompt prices; output prices cover every
generated token, reasoning tokens included (the o-series and DeepSeek-R1 bill their thinking as
output).
"""

from __future__ import annotations

from dataclasses import dataclass

from stratbench.errors import InputError

__all__ = ["Price", "SHIPPED_PRICES", "load_price_table"]


@dataclass(frozen=True)
class Price:
    input_per_million: float
    output_per_million: float
    as_of: str = ""  # when the price was read ("" for a user's table)
    source: str = ""  # where: a pricing page, or the user's file


_OPENAI = "https://openai.com/api/pricing"
_ANTHROPIC = "https://www.anthropic.com/pricing#api"
_GEMINI = "https://ai.google.dev/pricing"
_DEEPSEEK = "https://api-docs.deepseek.com/quick_start/pricing"
_QWEN = "https://www.alibabacloud.com/help/en/model-studio/models"
_MISTRAL = "https://mistral.ai/pricing#api-pricing"
_TOGETHER = "https://www.together.ai/pricing"


def _p(inp: float, out: float, as_of: str, source: str) -> Price:
    return Price(inp, out, as_of, source)


#: spec → list price (the models the four papers ran, and their current siblings)
SHIPPED_PRICES: dict[str, Price] = {
    # TMGBench: GPT-4o, GPT-4o-mini, o1-mini, Claude 3.5 Sonnet, Claude 3 Haiku
    "openai:gpt-4o": _p(2.50, 10.00, "2025-02", _OPENAI),
    "openai:gpt-4o-2024-08-06": _p(2.50, 10.00, "2025-02", _OPENAI),
    "openai:gpt-4o-mini": _p(0.15, 0.60, "2025-02", _OPENAI),
    "openai:gpt-4o-mini-2024-07-18": _p(0.15, 0.60, "2025-02", _OPENAI),
    "openai:o1-mini": _p(1.10, 4.40, "2025-02", _OPENAI),
    "openai:o3-mini": _p(1.10, 4.40, "2025-02", _OPENAI),
    "openai:o1": _p(15.00, 60.00, "2025-02", _OPENAI),
    "anthropic:claude-3-5-sonnet-20241022": _p(3.00, 15.00, "2025-02", _ANTHROPIC),
    "anthropic:claude-3-5-sonnet-20240620": _p(3.00, 15.00, "2025-02", _ANTHROPIC),
    "anthropic:claude-3-5-haiku-20241022": _p(0.80, 4.00, "2025-02", _ANTHROPIC),
    "anthropic:claude-3-haiku-20240307": _p(0.25, 1.25, "2025-02", _ANTHROPIC),
    "anthropic:claude-3-opus-20240229": _p(15.00, 75.00, "2025-02", _ANTHROPIC),
    # CHBench: Gemini-1.5-pro, Qwen-max, DeepSeek-chat (Llama-3.1-70B: together below)
    "gemini:gemini-1.5-pro": _p(1.25, 5.00, "2025-02", _GEMINI + " (prompts up to 128k tokens)"),
    "gemini:gemini-1.5-flash": _p(0.075, 0.30, "2025-02", _GEMINI + " (prompts up to 128k tokens)"),
    "qwen:qwen-max": _p(1.60, 6.40, "2025-02", _QWEN + " (international)"),
    "deepseek:deepseek-chat": _p(0.27, 1.10, "2025-02", _DEEPSEEK + " (cache miss)"),
    # TMGBench v2 and functional ToM: deepseek-reasoner (DeepSeek-R1), Mistral
    "deepseek:deepseek-reasoner": _p(0.55, 2.19, "2025-02", _DEEPSEEK + " (cache miss)"),
    "mistral:mistral-large-latest": _p(2.00, 6.00, "2025-02", _MISTRAL),
    "mistral:mistral-small-latest": _p(0.10, 0.30, "2025-02", _MISTRAL),
    "together:meta-llama/Meta-Llama-3.1-70B-Instruct-Turbo": _p(0.88, 0.88, "2025-02", _TOGETHER),
    "together:meta-llama/Meta-Llama-3.1-8B-Instruct-Turbo": _p(0.18, 0.18, "2025-02", _TOGETHER),
}


#: the most a price table may say a million tokens cost (no model comes near; a cost stays finite)
MAX_PRICE = 1_000_000.0


def load_price_table(path: str | None, label: str = "--price-table") -> dict[str, dict[str, float]]:
    """Prices per million tokens by model spec, from a JSON file the user supplies (``label``
    names where it was given: the flag, or a suite file's setting)."""
    if not path:
        return {}
    from stratbench.files import read_json

    data = read_json(path, label)  # unreadable, not JSON, too deep, NaN: one line naming the flag
    keys = ("input_per_million", "output_per_million")
    shape = (f"{label} {path}: expected {{spec: {{\"input_per_million\": number, "
             f"\"output_per_million\": number}}}}")
    if not isinstance(data, dict):
        raise InputError(shape)
    for spec, v in data.items():
        # both prices, and nothing else: a missing or misspelt price is never read as free
        if not isinstance(v, dict) or set(v) != set(keys):
            got = ", ".join(sorted(map(str, v))) if isinstance(v, dict) else type(v).__name__
            raise InputError(f"{shape}; {spec!r} has {got or 'no prices'}")
        if not all(isinstance(v[k], (int, float)) and not isinstance(v[k], bool) and 0 <= v[k] < float("inf")
                   for k in keys):
            raise InputError(f"{shape}; {spec!r} has a price that is no number of dollars at or above 0")
        if any(v[k] > MAX_PRICE for k in keys):  # (1e308 a million tokens made every cost inf: a run its resume refused)
            raise InputError(f"{shape}; {spec!r} has a price over {MAX_PRICE:,.0f} dollars a million tokens")
    return data
