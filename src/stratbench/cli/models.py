"""`stratbench models`: every backend and preset, the key variable it reads, whether that key is
set here, and what stratbench can do through it (log-probs, choice scoring, chat, reasoning) — the
screen a user reads before choosing a model spec and a policy."""

from __future__ import annotations

import json

import typer


def models(as_json: bool = typer.Option(False, "--json", help="Print the table as JSON.")) -> int:
    """List the model backends and provider presets, their key variables and capabilities."""
    from stratbench.cli.display import console
    from stratbench.models import BACKENDS
    from stratbench.models.providers import HTTP_PROVIDERS, LOCAL_BACKENDS, NATIVE_PROVIDERS, Provider, key_is_set

    known = {**LOCAL_BACKENDS, **HTTP_PROVIDERS, **NATIVE_PROVIDERS}
    added = [Provider(n, "added through the stratbench.models entry points", logprobs="?", choice="?", chat="?",
                      reasoning="?") for n in BACKENDS.names() if n not in known]
    rows = []
    for p in [*known.values(), *added]:
        key = key_is_set(p)
        spec = p.name if p.name in ("embedded", "embedded-instruct") else f"{p.name}:<model>"
        rows.append({"spec": spec, "what": p.what, "local": p.name in LOCAL_BACKENDS,
                     "base_url": p.base_url, "key_env": p.key_env,
                     "key": None if key is None else ("set" if key else "not set"),
                     "logprobs": p.logprobs, "choice": p.choice, "chat": p.chat, "reasoning": p.reasoning})
    if as_json:
        print(json.dumps(rows, indent=2))
        return 0
    from rich.markup import escape
    from rich.table import Table

    table = Table(title="model backends (--model SPEC)")
    for col in ("spec", "what", "key", "log-probs (--policy logprob)", "choice (--policy choice)", "chat",
                "reasoning"):
        table.add_column(col, overflow="fold")
    for r in rows:
        shown = "-" if r["key_env"] is None else f"{r['key_env']} ({r['key']})"
        table.add_row(*(escape(str(x)) for x in (r["spec"], r["what"], shown, r["logprobs"], r["choice"], r["chat"],
                                                 r["reasoning"])))
    console.print(table)
    console.print("Keys are read from the environment only, never written. A preset's URL (--json lists "
                  "them) is overridden by --base-url. Every backend can generate (--policy sample).",
                  markup=False)
    return 0


def register(app: typer.Typer) -> None:
    app.command("models")(models)
