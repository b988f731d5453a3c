"""A chat template that refuses a system message (Gemma 2's ``raise_exception('System role not
supported')``) gets the system text folded into the first user turn, as Gemma 3's own template
does, instead of a run whose every call is an error record (fuzz 12 A E2); a template that takes a
system message renders it as before."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from stratbench.models.chat_template import ChatTemplate
from stratbench.models.templates import fold_system

GEMMA2 = ("{%- for m in messages -%}{%- if m['role'] == 'system' -%}{{ raise_exception('System role not supported') }}"
          "{%- endif -%}{%- if (m['role'] == 'user') != (loop.index0 % 2 == 0) -%}"
          "{{ raise_exception('Conversation roles must alternate') }}{%- endif -%}"
          "<start_of_turn>{{ 'model' if m['role'] == 'assistant' else m['role'] }}\n{{ m['content'] | trim }}"
          "<end_of_turn>\n{% endfor -%}<start_of_turn>model\n")
PLAIN = "{% for m in messages %}<{{ m['role'] }}>{{ m['content'] }}\n{% endfor %}<assistant>"


def test_a_template_refusing_a_system_message_gets_it_in_the_first_user_turn(tmp_path):
    (tmp_path / "t.jinja").write_text(GEMMA2)
    t = ChatTemplate.load(tmp_path / "t.jinja")
    assert t.folds_system
    text, _ = t.render((("system", "Play well."), ("user", "Choose."), ("assistant", "A"), ("user", "Again.")))
    assert text == ("<start_of_turn>user\nPlay well.\n\nChoose.<end_of_turn>\n<start_of_turn>model\nA<end_of_turn>\n"
                    "<start_of_turn>user\nAgain.<end_of_turn>\n<start_of_turn>model")
    assert t.render((("user", "Choose."),))[0] == "<start_of_turn>user\nChoose.<end_of_turn>\n<start_of_turn>model"


def test_a_template_taking_a_system_message_renders_it_as_its_own_turn(tmp_path):
    (tmp_path / "t.jinja").write_text(PLAIN)
    t = ChatTemplate.load(tmp_path / "t.jinja")
    assert not t.folds_system
    assert t.render((("system", "S"), ("user", "U")))[0] == "<system>S\n<user>U\n<assistant>"


@given(st.lists(st.tuples(st.sampled_from(["system", "user", "assistant"]), st.text(max_size=5)), max_size=6))
def test_folding_keeps_every_text_and_leaves_no_system_turn(messages):
    folded = fold_system(messages)
    if not any(r == "system" for r, _ in messages):
        assert folded == tuple(messages)
        return
    assert all(r != "system" for r, _ in folded)
    assert [m for m in folded if m[0] == "assistant"] == [m for m in messages if m[0] == "assistant"]
    system = "\n\n".join(c for r, c in messages if r == "system")
    if system:
        first_user = next(c for r, c in folded if r == "user")
        assert first_user.startswith(system)
