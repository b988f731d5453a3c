"""The command line as data: every command path and, per parameter, its flags, default, type and
arity. Pinned by test_cli_spec.py so a refactor keeps commands, flags and per-suite defaults."""

from __future__ import annotations

from typing import Any


def _type_name(p: Any) -> str:
    desc = getattr(p, "type_descriptor", None)  # typer >= 0.29 (vendored click)
    if desc is not None:
        return str(getattr(desc, "annotation", desc)).replace("typing.", "")
    return str(getattr(getattr(p, "type", None), "name", ""))


def _walk(cmd: Any, path: tuple[str, ...], out: dict[str, Any]) -> None:
    params = []
    for p in cmd.params:
        default = p.default
        if callable(default):
            default = "<callable>"
        params.append({
            "name": p.name,
            "opts": sorted(p.opts),
            "secondary_opts": sorted(getattr(p, "secondary_opts", []) or []),
            "default": default if isinstance(default, (str, int, float, bool, type(None), list, tuple)) else repr(default),
            "type": _type_name(p),
            "required": bool(p.required),
            "multiple": bool(getattr(p, "multiple", False)),
            "is_flag": bool(getattr(p, "is_flag", False)),
            "kind": type(p).__name__,
        })
    out[" ".join(path) or "<root>"] = sorted(params, key=lambda d: d["name"])
    for name, sub in sorted(getattr(cmd, "commands", {}).items()):
        _walk(sub, path + (name,), out)


def cli_spec() -> dict[str, Any]:
    import typer

    from stratbench.cli.main import app

    out: dict[str, Any] = {}
    _walk(typer.main.get_command(app), (), out)
    return out
