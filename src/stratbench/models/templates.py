"""Chat templates rendered under limits, and checked once before a run.

A chat template is code from a file the user names (`--chat-template`: a tokenizer_config.json, a
.jinja file, a GGUF's metadata). It is rendered as llama-cpp-python renders it — its
`Jinja2ChatFormatter`, whose Jinja environment is sandboxed (`ImmutableSandboxedEnvironment`:
no attribute of Python internals, no mutation of lists or dicts, `range` capped at 100,000
items) — in an environment with the same settings and these limits:

* time: a render that runs longer than `TEMPLATE_TIME_LIMIT_S` (a loop that never ends, nested
  loops of 10^10 steps) stops with an error: the template's own lines check a deadline, and so
  does every sequence a filter yields item by item (a chain of ``|map`` filters runs in jinja's
  code, not the template's, and would run for minutes on one line);
* size: the rendered text, and every string an operator (``+``, ``*``, ``~``), a filter or a call
  builds, holds at most `TEMPLATE_MAX_CHARS` characters; a list or tuple (and a sequence a filter
  yields) at most `TEMPLATE_MAX_ITEMS` items, as the sandbox's ``range``; ``**`` is refused for
  huge powers — so a template cannot grow a value until memory runs out, nor hand a filter a
  sequence whose every item costs it time (``|sort`` of millions);
* content (`probe`, before a run): a conversation renders to a non-empty text that contains every
  message's content. An empty template (every prompt would lose its game) or one that drops the
  messages is refused with one line.

A render that breaks a limit raises `TemplateLimitError` (a ValueError): that request's failure,
recorded as an error, never a different prompt.
"""

from __future__ import annotations

import functools
import re
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from types import FrameType
from typing import Any

from stratbench.models.base import Message

TEMPLATE_TIME_LIMIT_S = 2.0  # a chat template renders in about a millisecond
TEMPLATE_MAX_CHARS = 4_000_000  # rendered text, and any one string a template builds
TEMPLATE_MAX_ITEMS = 100_000  # any one list, tuple or filtered sequence (the sandbox's range cap)
MAX_POWER_DIGITS = 10_000  # `a ** b` with a result of more digits is refused

# the conversations of the check before a run: their contents must all appear in the rendering
PROBE_USER = "stratbench-probe-user-content-4711"
PROBE_SYSTEM = "stratbench-probe-system-content-0815"
PROBE_ASSISTANT = "stratbench-probe-assistant-content-2718"
PROBE_LAST = "stratbench-probe-last-user-content-3141"


class TemplateLimitError(ValueError):
    """A chat template went past a limit of this module (time or size)."""


# the deadline of the render running in this thread (None: no render), for the checks that run
# outside the template's own code (filters)
_render = threading.local()


def _check_deadline() -> None:
    limit = getattr(_render, "limit", None)
    if limit is not None and time.monotonic() > limit:
        raise TemplateLimitError(f"chat template: rendering ran past its time limit of "
                                 f"{TEMPLATE_TIME_LIMIT_S:g} s (a loop that does not end?)")


def _sized(value: Any, what: str) -> Any:
    if isinstance(value, (str, bytes)) and len(value) > TEMPLATE_MAX_CHARS:
        raise TemplateLimitError(f"chat template: {what} builds a value of {len(value):,} items "
                                 f"(at most {TEMPLATE_MAX_CHARS:,})")
    if isinstance(value, (list, tuple)) and len(value) > TEMPLATE_MAX_ITEMS:
        raise TemplateLimitError(f"chat template: {what} builds a sequence of {len(value):,} items "
                                 f"(at most {TEMPLATE_MAX_ITEMS:,})")
    return value


def _bounded_items(items: Iterator[Any], what: str) -> Iterator[Any]:
    """A filter's lazily yielded sequence (``map``, ``select``, ``batch`` …), with the render's
    deadline checked as it is consumed and at most `TEMPLATE_MAX_ITEMS` items."""
    for n, item in enumerate(items, 1):
        if n > TEMPLATE_MAX_ITEMS:
            raise TemplateLimitError(f"chat template: {what} yields more than {TEMPLATE_MAX_ITEMS:,} items")
        if n % 256 == 0:
            _check_deadline()
        yield item


def _huge_width(fmt: Any) -> bool:
    """A format string with a width or precision above the cap ("%10000000000d", "{:>9999999999}")."""
    return isinstance(fmt, str) and any(int(d) > TEMPLATE_MAX_CHARS for d in re.findall(r"[0-9]{7,}", fmt))


def _check_arguments(args: Sequence[Any], kwargs: dict[str, Any], what: str) -> None:
    """Refused before the call: an integer argument above the cap (`center(10**10)`, `"x".ljust(...)`),
    which could only ask for a value too large."""
    for a in (*args, *kwargs.values()):
        if isinstance(a, int) and not isinstance(a, bool) and abs(a) > TEMPLATE_MAX_CHARS:
            raise TemplateLimitError(f"chat template: {what} is given {a:,} (at most {TEMPLATE_MAX_CHARS:,})")


def _str_method_size(method: Any, args: Sequence[Any], kwargs: dict[str, Any]) -> int:
    """An upper bound on the length of what a ``str`` method builds, known before it runs: the
    methods whose result can be far longer than their inputs (``replace`` with a longer text at
    every match, ``expandtabs`` with a wide tab); 0 for any other call."""
    text = getattr(method, "__self__", None)
    name = getattr(method, "__name__", None)
    if not isinstance(text, str):
        return 0
    try:
        if name == "replace":
            bound = _named_args(args, kwargs, ("old", "new", "count"))
            old, new, count = bound.get("old"), bound.get("new"), bound.get("count", -1)
            if not isinstance(old, str) or not isinstance(new, str):
                return 0
            n = text.count(old) if old else len(text) + 1
            if isinstance(count, int) and count >= 0:
                n = min(n, count)
            return len(text) + n * max(0, len(new) - len(old))
        if name == "expandtabs":
            size = _named_args(args, kwargs, ("tabsize",)).get("tabsize", 8)
            return len(text) + text.count("\t") * max(0, size) if isinstance(size, int) else 0
    except (TypeError, ValueError):
        return 0
    return 0


def _named_args(args: Sequence[Any], kwargs: dict[str, Any], names: tuple[str, ...]) -> dict[str, Any]:
    """A call's positional and keyword arguments by name (its first `names`)."""
    return {**dict(zip(names, args)), **{k: v for k, v in kwargs.items() if k in names}}


# filters that never make a text of their first argument: a large list through them builds nothing
_NOT_SHOWN = frozenset({"length", "count", "first", "last", "list", "random", "reverse", "sort", "unique",
                        "select", "reject", "map", "selectattr", "rejectattr", "batch", "slice", "min", "max",
                        "sum", "groupby", "dictsort", "items", "default", "d", "attr", "abs", "int", "float",
                        "bool", "round"})


def _shown_size_past_cap(value: Any) -> bool:
    """Whether the text of `value` (``str()``, ``tojson``) would hold more than `TEMPLATE_MAX_CHARS`
    characters: a list of 500 references to one string of 3.9 million is a small list whose text
    is 2 GB, built before any check after it could apply. Counted without building it, stopping
    as soon as the count passes the cap (so at most a few million steps, whatever the value)."""
    if not isinstance(value, (list, tuple, dict)):
        return False
    total, stack = 0, [value]
    while stack:
        item = stack.pop()
        if isinstance(item, (str, bytes)):
            total += len(item) + 4  # quotes and a separator
        elif isinstance(item, dict):
            total += 2
            for k, v in item.items():
                stack += (k, v)
        elif isinstance(item, (list, tuple)):
            total += 2
            stack += item
        else:
            total += 24  # a number or another small value's text
        if total > TEMPLATE_MAX_CHARS:
            return True
    return False


def _check_shown(args: Sequence[Any], kwargs: dict[str, Any], what: str) -> None:
    for a in (*args, *kwargs.values()):
        if _shown_size_past_cap(a):
            raise TemplateLimitError(f"chat template: {what} would make a text of more than "
                                     f"{TEMPLATE_MAX_CHARS:,} characters")


def _check_indent(args: Sequence[Any], kwargs: dict[str, Any]) -> None:
    """``indent`` adds its width to every line: ``('a\\n' * 1950000) | indent(1000)`` is 2 GB."""
    text = args[0] if args else kwargs.get("s")
    width = args[1] if len(args) > 1 else kwargs.get("width", 4)
    if not isinstance(text, str):
        return
    pad = len(width) if isinstance(width, str) else width if isinstance(width, int) else 0
    if len(text) + max(pad, 0) * (text.count("\n") + 1) > TEMPLATE_MAX_CHARS:
        raise TemplateLimitError(f"chat template: filter 'indent' builds a text of more than "
                                 f"{TEMPLATE_MAX_CHARS:,} characters")


def _bounded_filter(f: Callable[..., Any], name: str) -> Callable[..., Any]:
    @functools.wraps(f)  # keeps jinja's pass_context/pass_environment marks
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        _check_arguments(args, kwargs, f"filter {name!r}")
        if name not in _NOT_SHOWN:
            _check_shown(args[:1] if name not in ("format", "join") else args, kwargs, f"filter {name!r}")
        if name == "indent":
            _check_indent(args, kwargs)
        if name == "format" and any(_huge_width(a) for a in args):
            raise TemplateLimitError(f"chat template: filter 'format' is given a width above {TEMPLATE_MAX_CHARS:,}")
        if name == "replace":  # (s|replace(old, new, count): the str method's bound, before it is built)
            texts = [a for a in args if isinstance(a, str)]
            counts = [a for a in (*args, *kwargs.values()) if isinstance(a, int) and not isinstance(a, bool)]
            if len(texts) >= 3:
                size = _str_method_size(texts[0].replace, texts[1:3], {"count": counts[0]} if counts else {})
                if size > TEMPLATE_MAX_CHARS:
                    raise TemplateLimitError(f"chat template: filter 'replace' would build a text of {size:,} "
                                             f"characters (at most {TEMPLATE_MAX_CHARS:,})")
        _check_deadline()
        out = _sized(f(*args, **kwargs), f"filter {name!r}")
        if isinstance(out, Iterator) and not isinstance(out, (str, bytes)):
            return _bounded_items(out, f"filter {name!r}")
        return out

    return wrapper


def _leave_out(env: Any) -> None:
    """Take from a template environment what no chat template needs: `lipsum` builds its text
    outside the checks (lipsum(600000) ran 110 s past the time limit, fuzz 25 A F3), and the
    `random` filter would give a resumed run other prompts than the run it finishes."""
    env.globals.pop("lipsum", None)
    env.filters.pop("random", None)


def _environment_class() -> type:
    """The bounded sandbox (built on first use: jinja2 is imported only when a template is)."""
    from jinja2.compiler import CodeGenerator
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    class _Generator(CodeGenerator):
        def visit_Concat(self, node: Any, frame: Any) -> None:  # `a ~ b`: its operands and result checked
            self.write("environment.sized_concat(")
            from jinja2 import nodes

            wrapped = [nodes.Call(nodes.EnvironmentAttribute("shown_operand"), [arg], [], None, None,
                                  lineno=arg.lineno) for arg in node.nodes]
            super().visit_Concat(nodes.Concat(wrapped, lineno=node.lineno), frame)
            self.write(")")

    class BoundedEnvironment(ImmutableSandboxedEnvironment):  # type: ignore[misc]
        code_generator_class = _Generator
        intercepted_binops = frozenset({"+", "*", "**", "%"})

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            _leave_out(self)
            self.filters = {k: _bounded_filter(f, k) for k, f in self.filters.items()}
            self.finalize = self.shown_output  # `{{ value }}`: checked before its text is made

        @staticmethod
        def shown_output(value: Any) -> Any:
            _check_shown((value,), {}, "'{{ … }}'")
            return value

        @staticmethod
        def shown_operand(value: Any) -> Any:
            _check_shown((value,), {}, "'~'")
            return value

        def sized_concat(self, value: Any) -> Any:
            return _sized(value, "'~'")

        def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
            if operator == "*":  # refused before the value is built
                for seq, n in ((left, right), (right, left)):
                    if isinstance(seq, (str, bytes, list, tuple)) and isinstance(n, int) \
                            and len(seq) * n > TEMPLATE_MAX_CHARS:
                        raise TemplateLimitError(f"chat template: '*' builds a value of {len(seq) * n:,} items "
                                                 f"(at most {TEMPLATE_MAX_CHARS:,})")
            if operator == "**" and isinstance(left, int) and isinstance(right, int) and abs(left) > 1 \
                    and right > 0 and right * len(str(abs(left))) > MAX_POWER_DIGITS:
                raise TemplateLimitError(f"chat template: '**' of {left} to the {right} is too large")
            if operator == "%" and _huge_width(left):
                raise TemplateLimitError(f"chat template: '%' is given a width above {TEMPLATE_MAX_CHARS:,}")
            if operator == "%" and isinstance(left, str):
                _check_shown((right,), {}, "'%'")
            return _sized(super().call_binop(context, operator, left, right), f"{operator!r}")

        def call(__self, __context: Any, __obj: Any, *args: Any, **kwargs: Any) -> Any:  # noqa: N805
            method = getattr(__obj, "__wrapped__", __obj)  # jinja wraps str.format for its sandbox
            name = getattr(method, "__name__", None)
            _check_arguments(args, kwargs, f"{'range' if name == 'safe_range' else name}(...)" if name else "a call")
            if name != "shown_operand":
                _check_shown(args, kwargs, f"{name}(...)" if name else "a call")
            if getattr(method, "__name__", None) in ("format", "format_map") \
                    and _huge_width(getattr(method, "__self__", None)):
                raise TemplateLimitError(f"chat template: a format is given a width above {TEMPLATE_MAX_CHARS:,}")
            size = _str_method_size(method, args, kwargs)
            if size > TEMPLATE_MAX_CHARS:  # (refused before it is built: 60,000 × 60,000 characters is 3.6 GB)
                raise TemplateLimitError(f"chat template: {name}(...) would build a text of {size:,} characters "
                                         f"(at most {TEMPLATE_MAX_CHARS:,})")
            return _sized(super().call(__context, __obj, *args, **kwargs), "a call")

    return BoundedEnvironment


@functools.lru_cache(maxsize=1)
def bounded_environment_class() -> type:
    return _environment_class()


def _deadline_tracer(limit: float) -> Callable[[FrameType, str, Any], Any]:
    """A trace function that checks the deadline on every line of template code (jinja compiles a
    template to Python code named "<template>"; a loop's every step is a line event)."""

    def local(frame: FrameType, event: str, arg: Any) -> Any:
        _check_deadline()
        return local

    def on_call(frame: FrameType, event: str, arg: Any) -> Any:
        return local if frame.f_code.co_filename == "<template>" else None

    return on_call


class BoundedTemplate:
    """A compiled template whose `render` keeps the limits (what llama-cpp-python's formatter calls)."""

    def __init__(self, template: Any) -> None:
        self._template = template

    def render(self, *args: Any, **kwargs: Any) -> str:
        limit = time.monotonic() + TEMPLATE_TIME_LIMIT_S
        previous, outer = sys.gettrace(), getattr(_render, "limit", None)
        _render.limit = limit
        sys.settrace(_deadline_tracer(limit))
        pieces: list[str] = []
        n = 0
        try:
            for piece in self._template.generate(*args, **kwargs):
                n += len(piece)
                if n > TEMPLATE_MAX_CHARS:
                    raise TemplateLimitError(f"chat template: the rendered text exceeds {TEMPLATE_MAX_CHARS:,} "
                                             "characters")
                pieces.append(piece)
        finally:
            sys.settrace(previous)
            _render.limit = outer
        text = "".join(pieces)
        if not text.isascii():
            try:
                text.encode("utf-8")
            except UnicodeEncodeError as e:  # a literal '\udc80': no prompt file or request can hold it
                raise TemplateLimitError(f"chat template: the rendered text holds a lone surrogate "
                                         f"({text[e.start]!r}), which no UTF-8 text can hold") from None
        return text


def bounded_formatter(template: str, eos_token: str, bos_token: str, **kwargs: Any) -> Any:
    """llama-cpp-python's `Jinja2ChatFormatter` for ``template`` (the same variables, settings,
    extensions and filters), rendering in the bounded sandbox. Raises what jinja2 raises for a
    template that does not compile."""
    from llama_cpp.llama_chat_format import Jinja2ChatFormatter

    # made with an empty template (their environment compiles it, folding constants unbounded:
    # "x" * 10**10 would be built right there); the real one is compiled in the bounded sandbox
    formatter = Jinja2ChatFormatter(template="", eos_token=eos_token, bos_token=bos_token, **kwargs)
    formatter.template = template
    theirs = getattr(getattr(formatter, "_environment", None), "environment", None)
    cls = bounded_environment_class()
    if theirs is not None:
        env = cls(loader=theirs.loader, trim_blocks=theirs.trim_blocks, lstrip_blocks=theirs.lstrip_blocks,
                  keep_trailing_newline=theirs.keep_trailing_newline, autoescape=theirs.autoescape,
                  extensions=[type(e) for e in theirs.extensions.values()])
        for name, f in theirs.filters.items():
            if env.filters.get(name) is None or getattr(env.filters[name], "__wrapped__", None) is not f:
                env.filters[name] = _bounded_filter(f, name)
        env.globals.update({k: v for k, v in theirs.globals.items() if k != "range"})
        _leave_out(env)  # (their environment has both)
    else:  # pragma: no cover - a llama-cpp-python that keeps its environment elsewhere
        import jinja2

        env = cls(loader=jinja2.BaseLoader(), trim_blocks=True, lstrip_blocks=True,
                  extensions=["jinja2.ext.loopcontrols"])
        env.filters["tojson"] = _bounded_filter(Jinja2ChatFormatter.tojson, "tojson")
    formatter._environment = BoundedTemplate(env.from_string(template))  # type: ignore[assignment]
    return formatter


def probe(render: Callable[[Sequence[Message]], str]) -> str | None:
    """Why `render` (a conversation → its text) is no usable chat template, or None: a
    conversation of one user message must render to a non-empty text holding that message, one of
    several turns (user, assistant, user) must keep every turn, and a system message, where the
    template takes one, must appear too."""
    try:
        text = render((("user", PROBE_USER),))
    except Exception as e:  # noqa: BLE001 - the template's own error, or a limit
        return f"it fails on a one-message conversation ({_reason(e)})"
    if not text.strip():
        return "it renders a conversation as empty text"
    if PROBE_USER not in text:
        return "its rendering of a conversation does not contain the user's message"
    turns = (("user", PROBE_USER), ("assistant", PROBE_ASSISTANT), ("user", PROBE_LAST))
    try:  # the suites' repeated games send whole conversations: every turn must reach the prompt
        text = render(turns)
    except Exception as e:  # noqa: BLE001 - the template's own error, or a limit
        return f"it fails on a conversation of several turns ({_reason(e)})"
    if any(content not in text for _, content in turns):
        return "its rendering of a conversation of several turns drops one of them"
    try:
        text = render((("system", PROBE_SYSTEM), ("user", PROBE_USER)))
    except TemplateLimitError as e:
        return f"it fails on a conversation with a system message ({_reason(e)})"
    except Exception:  # noqa: BLE001 - a template that takes no system turn (raise_exception): its choice
        return None
    if PROBE_SYSTEM not in text or PROBE_USER not in text:
        return "its rendering of a conversation drops the system message"
    return None


def refuses_system(render: Callable[[Sequence[Message]], str]) -> bool:
    """Whether `render` raises on a conversation with a system message (Gemma 2's templates:
    ``raise_exception('System role not supported')``) while taking one without (`probe` passed)."""
    try:
        render((("system", PROBE_SYSTEM), ("user", PROBE_USER)))
    except TemplateLimitError:
        return False  # (a limit, not a refusal: `probe` names it)
    except Exception:  # noqa: BLE001 - the template's own refusal
        return True
    return False


def fold_system(messages: Sequence[Message]) -> tuple[Message, ...]:
    """The conversation for a template that refuses a system message: the system text put at the
    start of the first user message, a blank line between — what Gemma 3's own template does with
    one — so the suites' instructions reach such a model instead of failing every call."""
    if not any(r == "system" for r, _ in messages):
        return tuple(messages)
    system = "\n\n".join(c for r, c in messages if r == "system")
    rest = [(r, c) for r, c in messages if r != "system"]
    if not system:
        return tuple(rest)
    for i, (r, c) in enumerate(rest):
        if r == "user":
            rest[i] = (r, f"{system}\n\n{c}")
            return tuple(rest)
    return (("user", system), *rest)


def _reason(e: BaseException) -> str:
    from stratbench.files import problem_text

    text = problem_text(e)
    if isinstance(e, ValueError) and text.startswith("chat template: "):  # ours, already named
        return text.removeprefix("chat template: ")[:300]
    return f"{type(e).__name__}: {text}"[:300]


__all__ = ["PROBE_SYSTEM", "PROBE_USER", "TEMPLATE_MAX_CHARS", "TEMPLATE_MAX_ITEMS", "TEMPLATE_TIME_LIMIT_S", "BoundedTemplate",
           "TemplateLimitError", "bounded_environment_class", "bounded_formatter", "fold_system", "probe",
           "refuses_system"]
