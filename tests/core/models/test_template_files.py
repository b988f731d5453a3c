"""Template files are read with a size bound: a weights file given to --chat-template by mistake
(gigabytes) is one line naming it, before it is read — never a MemoryError or minutes of reading."""

from __future__ import annotations

import os

import pytest

from stratbench.errors import InputError
from stratbench.models.chat_template import MAX_TEMPLATE_BYTES, ChatTemplate


def _sparse(path, size):
    with open(path, "wb") as f:
        f.truncate(size)
    return path


@pytest.mark.parametrize("name", ["model.safetensors", "template.jinja", "tokenizer_config.json"])
def test_a_huge_template_file_is_refused_before_it_is_read(tmp_path, name):
    f = _sparse(tmp_path / name, 3 * 2**30)
    with pytest.raises(InputError, match=rf"--chat-template {f}: 3221225472 bytes; files over {MAX_TEMPLATE_BYTES} bytes"):
        ChatTemplate.load(f)


def test_a_huge_config_beside_a_jinja_and_a_huge_jinja_beside_a_config_are_refused(tmp_path):
    a = tmp_path / "a"
    a.mkdir()
    _sparse(a / "tokenizer_config.json", MAX_TEMPLATE_BYTES + 1)
    (a / "t.jinja").write_text("{% for m in messages %}{{ m['content'] }}{% endfor %}")
    with pytest.raises(InputError, match=r"tokenizer_config.json: \d+ bytes; files over") as e:
        ChatTemplate.load(a / "t.jinja")
    assert "not a JSON file" not in str(e.value)
    b = tmp_path / "b"
    b.mkdir()
    (b / "tokenizer_config.json").write_text('{"bos_token": "<s>"}')
    _sparse(b / "chat_template.jinja", MAX_TEMPLATE_BYTES + 1)
    with pytest.raises(InputError, match=r"chat_template.jinja: \d+ bytes; files over"):
        ChatTemplate.load(b / "tokenizer_config.json")


def test_a_template_at_the_bound_is_read(tmp_path):
    body = "{% for m in messages %}{{ m['content'] }}{% endfor %}"
    f = tmp_path / "t.jinja"
    f.write_text(body + "{#" + "x" * (MAX_TEMPLATE_BYTES - len(body) - 4) + "#}")
    assert os.path.getsize(f) == MAX_TEMPLATE_BYTES
    assert ChatTemplate.load(f).has_template
