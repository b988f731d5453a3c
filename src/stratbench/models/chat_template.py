"""An HTTP model's chat template, known here (`--chat-template`: its GGUF, tokenizer_config.json or
.jinja) so that the completions endpoint scores exactly the prompt the chat route would render,
and, from a GGUF, its tokenizer for the top-k walk. Split from `stratbench.models.openai_api`;
the rendering limits are `stratbench.models.templates`."""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path
from typing import Any, Protocol, Sequence

from stratbench.errors import InputError
from stratbench.files import problem_text, read_text
from stratbench.models.base import (
    Message,
)
from stratbench.models.templates import bounded_formatter, fold_system, probe, refuses_system


class Tokenizer(Protocol):
    """The server's tokenizer, known here (for the top-k walk): token ids of a text as the server
    splits a completions prompt (special-token texts parsed, no BOS), and a token's text as the
    server names it in its top-k log-probs."""

    def tokenize(self, text: str) -> list[int]: ...

    def piece(self, token: int) -> str: ...


class _GGUFTokenizer:
    """llama.cpp's tokenizer of a GGUF (a vocabulary-only `llama_cpp.Llama`): what llama.cpp's and
    llama-cpp-python's servers use for that file."""

    def __init__(self, llm: Any) -> None:
        self._llm = llm
        self._pieces: dict[int, str] = {}

    def tokenize(self, text: str) -> list[int]:
        return list(self._llm.tokenize(text.encode("utf-8"), add_bos=False, special=True))

    def piece(self, token: int) -> str:
        # as llama-cpp-python's server writes top-k keys: detokenize([id]) without special texts
        if token not in self._pieces:
            self._pieces[token] = self._llm.detokenize([token]).decode("utf-8", errors="ignore")
        return self._pieces[token]


_TEMPLATE_VARS = re.compile(r"\b(bos_token|eos_token)\b")


def _token_text(value: Any) -> str:
    """tokenizer_config.json's bos_token / eos_token: a string, an AddedToken dict, or null."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and isinstance(value.get("content"), str):
        return str(value["content"])
    return ""



#: the largest template file read (a .jinja is kilobytes, a tokenizer_config.json a few megabytes):
#: a weights file given by mistake is refused before it is read, not read whole into memory
MAX_TEMPLATE_BYTES = 16 * 2**20


def _read(p: Path) -> str:
    """A template file's text (UTF-8, at most MAX_TEMPLATE_BYTES), or one --chat-template line."""
    return read_text(p, "--chat-template", max_bytes=MAX_TEMPLATE_BYTES)


class ChatTemplate:
    """A model's chat template, held by the client to render conversations exactly as the
    server's chat route would (see the module docstring), and — from a GGUF — its tokenizer.

    `load(path)`: a GGUF file (template from ``tokenizer.chat_template``, BOS/EOS texts and
    ``add_bos_token`` from its vocabulary, rendered as `stratbench.models.llama` renders it
    locally, and the tokenizer); a tokenizer_config.json (``chat_template``, a string or the
    "default" of a list, else a chat_template.jinja beside it; ``bos_token``, ``eos_token``,
    ``add_bos_token``); a .jinja file (with the BOS/EOS texts of a tokenizer_config.json beside
    it, if any); or a folder holding those."""

    def __init__(self, formatter: Any, *, bos_token: str, add_bos: bool | None, source: str,
                 digest: str, tokenizer: Tokenizer | None = None) -> None:
        self._formatter = formatter  # None: a GGUF without a template (tokenizer only)
        self.bos_token = bos_token
        self.add_bos = add_bos  # does the server add a BOS to a completions prompt (None: unknown)
        self.source = source
        self.digest = digest
        self.tokenizer = tokenizer
        self.folds_system = False  # the template refuses a system message: folded into the first user turn

    @property
    def has_template(self) -> bool:
        return self._formatter is not None

    def describe(self) -> str:
        return f"{self.source}:sha256:{self.digest[:16]}"

    def render(self, messages: Sequence[Message]) -> tuple[str, str]:
        """(the rendered conversation with the assistant's turn opened, the text to send to the
        completions endpoint). ValueError when the template fails or cannot be reproduced."""
        if self._formatter is None:
            raise ValueError(f"{self.source} has no chat template")
        if self.folds_system:
            messages = fold_system(messages)
        try:
            res = self._formatter(messages=[{"role": r, "content": c} for r, c in messages])
        except ValueError:
            raise
        except Exception as e:  # noqa: BLE001 - a template error (jinja2) is this request's failure
            raise ValueError(f"chat template: {type(e).__name__}: {e}") from None
        text = str(res.prompt)
        if not getattr(res, "added_special", False):
            # a built-in format: the chat route adds a BOS exactly when a completions prompt gets one
            return text, text
        # the template wrote its special tokens: the chat route adds no BOS, the completions
        # endpoint adds one when the vocabulary says so
        if self.add_bos is not False and self.bos_token and text.startswith(self.bos_token):
            return text, text[len(self.bos_token):]
        if self.add_bos:
            raise ValueError(f"chat template of {self.source}: the server adds a BOS to a completions "
                             "prompt that its chat route would not have (the template writes none)")
        return text, text

    # -- loading ------------------------------------------------------------------------------

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> "ChatTemplate":
        """The template of `path` (see the class docstring), checked: a file is what its name says
        (a .gguf begins with the GGUF magic bytes, a .json is JSON), a template is not empty and
        renders a conversation with every message's content in it (`templates.probe`). Any
        problem is one InputError line, before a run starts."""
        if not str(path).strip():
            raise InputError("--chat-template: give a file (the model's GGUF, tokenizer_config.json or .jinja); "
                             "an empty path names none")
        p = Path(path).expanduser()
        if p.is_dir():
            for name in ("tokenizer_config.json", "chat_template.jinja"):
                if (p / name).is_file():
                    p = p / name
                    break
            else:
                raise InputError(f"--chat-template {p}: no tokenizer_config.json or chat_template.jinja there")
        if not p.is_file():
            if p.is_symlink() and not p.exists():
                raise InputError(f"--chat-template {p}: a symbolic link to nothing (or a loop of links)")
            raise InputError(f"--chat-template {p}: " + ("not a regular file" if p.exists() else "no such file"))
        try:
            with p.open("rb") as f:
                magic = f.read(4)
        except OSError as e:
            raise InputError(f"--chat-template {p}: {e}") from None
        if magic == b"GGUF":
            template = cls._from_gguf(p)
        elif p.suffix.lower() == ".gguf":
            raise InputError(f"--chat-template {p}: not a GGUF file (it does not begin with the GGUF magic "
                             "bytes); a template file is a .jinja or a tokenizer_config.json")
        else:
            template = cls._from_text(p)
        if template.has_template:
            why = probe(lambda messages: template.render(messages)[0])
            if why is not None:
                raise InputError(f"--chat-template {p}: not a usable chat template: {why}")
            template.folds_system = refuses_system(lambda messages: template.render(messages)[0])
        return template

    @classmethod
    def _from_text(cls, p: Path) -> "ChatTemplate":
        text = _read(p)
        if p.suffix.lower() == ".json":
            return cls._from_tokenizer_config(p, text)
        if not text.strip():
            raise InputError(f"--chat-template {p}: empty template")
        config = p.parent / "tokenizer_config.json"
        if config.is_file():
            config_text = _read(config)
            try:
                conf = json.loads(config_text)
            except RecursionError:
                raise InputError(f"--chat-template {config}: not a tokenizer_config.json (nested too deeply)") from None
            except (OSError, ValueError) as e:
                raise InputError(f"--chat-template {config}: not a JSON file ({problem_text(e)})") from None
            return cls._jinja(text, conf if isinstance(conf, dict) else {}, p.name, p)
        if _TEMPLATE_VARS.search(text):
            raise InputError(f"--chat-template {p}: the template uses bos_token/eos_token, which a .jinja "
                             "file alone does not give; pass the model's tokenizer_config.json or GGUF")
        return cls._jinja(text, {}, p.name, p)

    @classmethod
    def _from_tokenizer_config(cls, p: Path, text: str) -> "ChatTemplate":
        try:
            conf = json.loads(text)
        except RecursionError:
            raise InputError(f"--chat-template {p}: not a tokenizer_config.json (nested too deeply)") from None
        except ValueError as e:
            raise InputError(f"--chat-template {p}: not a JSON file ({problem_text(e)})") from None
        if not isinstance(conf, dict):
            raise InputError(f"--chat-template {p}: not a tokenizer_config.json (not an object)")
        template = conf.get("chat_template")
        if isinstance(template, list):  # [{"name": ..., "template": ...}]
            named = {t.get("name"): t.get("template") for t in template if isinstance(t, dict)}
            template = named.get("default", next(iter(named.values()), None))
        if template is None:
            beside = p.parent / "chat_template.jinja"
            if beside.exists() and not beside.is_file():  # a folder, a FIFO, /dev/zero: never read
                raise InputError(f"--chat-template {p}: no chat_template in it, and the chat_template.jinja beside "
                                 f"it is {'a directory' if beside.is_dir() else 'not a regular file'}")
            if beside.is_file():
                template = _read(beside)
        if not isinstance(template, str) or not template.strip():
            raise InputError(f"--chat-template {p}: no chat_template in it (nor a chat_template.jinja beside it)")
        return cls._jinja(template, conf, p.name, p)

    @classmethod
    def _jinja(cls, template: str, conf: dict[str, Any], source: str, path: Path) -> "ChatTemplate":
        """`source` (the file's name) is the template's identity (`describe`, cache keys); `path`
        names it in messages, as every other --chat-template message does."""
        bos, eos = _token_text(conf.get("bos_token")), _token_text(conf.get("eos_token"))
        add_bos = conf.get("add_bos_token")
        add_bos = add_bos if isinstance(add_bos, bool) else None
        try:
            formatter = bounded_formatter(template, eos_token=eos, bos_token=bos)
        except ImportError:
            raise InputError(f"--chat-template {path}: rendering a template needs llama-cpp-python") from None
        except Exception as e:  # noqa: BLE001 - jinja2's TemplateSyntaxError and kin
            raise InputError(f"--chat-template {path}: not a valid template ({type(e).__name__}: {problem_text(e)})") from None
        digest = hashlib.sha256(json.dumps(["jinja", template, bos, eos, add_bos]).encode()).hexdigest()
        return cls(formatter, bos_token=bos, add_bos=add_bos, source=source, digest=digest)

    @classmethod
    def _from_gguf(cls, p: Path) -> "ChatTemplate":
        try:
            import llama_cpp

            from stratbench.models.llama import _chat_formatter, _silence_llama_log, open_llama
        except ImportError:
            raise InputError(f"--chat-template {p}: reading a GGUF needs llama-cpp-python") from None
        _silence_llama_log(llama_cpp)
        llm = open_llama(llama_cpp, f"--chat-template {p}: cannot read the GGUF",
                         model_path=str(p), vocab_only=True, verbose=False)
        template = (llm.metadata or {}).get("tokenizer.chat_template") or ""
        formatter = _chat_formatter(llm) if template else None
        if template and formatter is None:
            raise InputError(f"--chat-template {p}: llama-cpp-python renders this template as its "
                             f"{llm.chat_format!r} format, which this client does not reproduce")
        bos_id = llm.token_bos()
        bos = llm._model.token_get_text(bos_id) if bos_id != -1 else ""
        # llama-cpp-python's completions add [CLS or BOS] when the vocabulary adds a BOS
        add_bos = bool(llm._model.add_bos_token()) and bos_id != -1
        digest = hashlib.sha256(json.dumps(["gguf", template, llm.chat_format, bos, add_bos,
                                            llm.n_vocab()]).encode()).hexdigest()
        return cls(formatter, bos_token=bos, add_bos=add_bos, source=p.name, digest=digest,
                   tokenizer=_GGUFTokenizer(llm))
