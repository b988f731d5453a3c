"""The paper's "LM prompting" templates (Appendix, Figures 1-3), built incrementally.

Figure 1 (LM prompting, the agent's action) is::

    You are playing a game repeatedly with another player. In this game, you can choose between
    Option J and Option F. You will play 100 rounds in total with the same player.

    The rules of the game are as follows:

    If you choose Option J and the other player chooses Option J, then you win 10 points and the
    other player wins 7 points.
    ...
    In round 1, you chose Option J and the other player chose Option J. Thus, you won 10 points
    and the other player won 7 points.
    ...
    You are currently playing round 5.

    Q: Which Option do you choose, Option J or Option F?

    A: Option {action}

(paragraphs separated by a blank line). The action is read from the model's probabilities of the
action labels after ``A: Option``.

Figure 2 (literal ToM, *agent first*, used for the LM-prompting ToM % because it is asked after the
agent has acted) ends the same history with ``In round 5, you chose Option J and the other player
chose Option {action}``; Figure 3 (*partner first*, asked before the agent acts) writes every
history line partner first and ends with ``In round 5, the other player chose Option {action}``.

Incremental design (what makes llama.cpp prefix reuse work): a prompt is
``header + history + query``. ``header`` is fixed for the episode, ``history`` only ever grows by
one full round line per round, and ``query`` is the only part that is thrown away. So round t's
prompt minus its query is a strict prefix of round t+1's prompt. The agent-first ToM query is even
a prefix of the history line the round then produces, so with ``tom_variant="agent_first"`` the
action prompt, the ToM prompt and the next round's action prompt all extend each other.

Spacing: the paper's text is ``A: Option {action}``. Prompts here end at ``A: Option`` and the
continuations are ``" J"``, ``" F"``, ... - the same characters. This is deliberate: Gemma's (and
most SentencePiece/BPE) tokenizers encode ``" J"`` as one token (``▁J``), whereas a prompt ending in
``"A: Option "`` would put a lone space token before an unnatural space-less ``J``.

Payoff wording: Appendix C.1 says RPS prompts say that the players "receive a score of +1/0/-1"
rather than "win N points" (RPS has negative payoffs). The paper prints no RPS prompt, so the RPS
sentences here are our reconstruction: "then you receive a score of +1 and the other player
receives a score of -1." and, in the history, "Thus, you received a score of +1 and the other
player received a score of -1."

Ablations (Table 3): ``payoffs=False`` drops the rules paragraphs (the payoff table) but keeps the
points received in the history lines (the paper's "-Payoffs" removes the payoff table; without the
received points nothing in the prompt would say what is good); ``history=False`` drops the round
lines (the round number stays).

Chat models (``--prompting LM --chat``, reported as policy ``choice``): the chat twin of LM
prompting, lm-eval's multiple-choice scoring of chat models. The prompt up to its question is the
user's message, the model's chat template opens the assistant's turn, and the labels are scored
as continuations of the answer stem ``A: Option`` written at the start of that turn (``" J"``,
as for raw models). So Figure 1 becomes::

    user:      You are playing a game repeatedly ... (rules, history as above)
               You are currently playing round 5.
               Q: Which Option do you choose, Option J or Option F?
    assistant: A: Option {action}

The literal-ToM prompts have no question in Figures 2-3 (the model completes a history line), so
the chat twin asks the generation prompts' questions (Figures 5 and, partner first, our analogue):
agent first, as the next turn of the action's conversation after the agent's own answer
``A: Option J``::

    user:      In round 5, you chose Option J.
               Q: Which Option did you think the other player chose?
    assistant: A: Option {action}

and partner first (asked before acting) as a conversation of its own, the history written partner
first, ending "You are currently playing round 5." / "Q: Which Option do you think the other
player will choose in this round?". Each round starts a new conversation (the history stays user
text, as in the paper's prompts), so round t+1's conversation shares round t's up to its
history: a prefix-reusing llama.cpp model reuses exactly the tokens the rendered transcripts
share (it compares tokens, so a template that renders earlier turns differently only costs the
reuse, never the numbers).
"""

from __future__ import annotations

from dataclasses import dataclass

from stratbench.errors import InputError
from stratbench.suites.tom.games import T_DEFAULT, RepeatedGame

PARA = "\n\n"
"""Paragraph separator (the paper's figures put a blank line between paragraphs)."""

ANSWER_STEM = "A: Option"
"""The action query ends here; the labels are scored as ``" " + label`` continuations."""

TOM_VARIANTS = ("agent_first", "partner_first")


def _options_list(labels: tuple[str, ...]) -> str:
    """'Option J and Option F' / 'Option J, Option F and Option B' (Figure 1 wording)."""
    opts = [f"Option {lab}" for lab in labels]
    return opts[0] if len(opts) == 1 else ", ".join(opts[:-1]) + " and " + opts[-1]


def _options_or(labels: tuple[str, ...]) -> str:
    """'Option J or Option F' / 'Option J, Option F or Option B' (the Q: line)."""
    opts = [f"Option {lab}" for lab in labels]
    return opts[0] if len(opts) == 1 else ", ".join(opts[:-1]) + " or " + opts[-1]


def _pts(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else f"{x:g}"


def _score(x: float) -> str:
    """RPS score: "+1", "0", "-1"."""
    return "0" if x == 0 else ("+" if x > 0 else "") + _pts(x)


def answer_format(labels: tuple[str, ...]) -> str:
    """The template's placeholder: '<J or F>' / '<J, F or B>'."""
    return "<" + (labels[0] if len(labels) == 1 else ", ".join(labels[:-1]) + " or " + labels[-1]) + ">"


def continuations(labels: tuple[str, ...]) -> tuple[str, ...]:
    """The scored continuations: a space then the label (completing ``... Option``)."""
    return tuple(" " + lab for lab in labels)


@dataclass(frozen=True)
class LMPrompts:
    """Templates for one game, label set, horizon and history order.

    ``order``: "agent_first" (Figures 1-2: "you chose X and the other player chose Y") or
    "partner_first" (Figure 3: "the other player chose Y and you chose X"). ``payoffs`` /
    ``history``: the Table 3 ablations (see the module doc).
    """

    game: RepeatedGame
    label_set: str = "neutral"
    T: int = T_DEFAULT
    order: str = "agent_first"
    payoffs: bool = True
    history: bool = True

    def __post_init__(self) -> None:
        if self.order not in TOM_VARIANTS:
            raise InputError(f"order must be one of {TOM_VARIANTS}, got {self.order!r}")
        self.game.action_labels(self.label_set)  # validate

    @property
    def labels(self) -> tuple[str, ...]:
        return self.game.action_labels(self.label_set)

    @property
    def continuations(self) -> tuple[str, ...]:
        return continuations(self.labels)

    # -- pieces -------------------------------------------------------------------------------
    def options_or(self) -> str:
        return _options_or(self.labels)

    def answer_format(self) -> str:
        return answer_format(self.labels)

    def intro(self) -> str:
        return (
            "You are playing a game repeatedly with another player. In this game, you can choose "
            f"between {_options_list(self.labels)}. You will play {self.T} rounds in total with the same player."
        )

    def _outcome(self, a: int, b: int, past: bool) -> str:
        g = self.game
        me, other = g.payoff_me[a, b], g.payoff_partner[a, b]
        if g.score_wording:
            if past:
                return f"you received a score of {_score(me)} and the other player received a score of {_score(other)}"
            return f"you receive a score of {_score(me)} and the other player receives a score of {_score(other)}"
        if past:
            return f"you won {_pts(me)} points and the other player won {_pts(other)} points"
        return f"you win {_pts(me)} points and the other player wins {_pts(other)} points"

    def rules(self) -> list[str]:
        """The payoff table as the paper's rule paragraphs (empty when ``payoffs`` is off)."""
        if not self.payoffs:
            return []
        labs = self.labels
        out = ["The rules of the game are as follows:"]
        for a, la in enumerate(labs):
            for b, lb in enumerate(labs):
                out.append(f"If you choose Option {la} and the other player chooses Option {lb}, then "
                           f"{self._outcome(a, b, past=False)}.")
        return out

    def header(self) -> str:
        return PARA.join([self.intro(), *self.rules()]) + PARA

    def round_line(self, t: int, my_action: int, partner_action: int) -> str:
        """History line of round t (0-based; printed 1-based), ending with a paragraph break."""
        la, lb = self.labels[my_action], self.labels[partner_action]
        if self.order == "agent_first":
            chose = f"you chose Option {la} and the other player chose Option {lb}"
        else:
            chose = f"the other player chose Option {lb} and you chose Option {la}"
        return f"In round {t + 1}, {chose}. Thus, {self._outcome(my_action, partner_action, past=True)}." + PARA

    def history_text(self, rounds: list[tuple[int, int]]) -> str:
        """All round lines ('' with ``history`` off)."""
        if not self.history:
            return ""
        return "".join(self.round_line(t, a, b) for t, (a, b) in enumerate(rounds))

    def action_query(self, t: int) -> str:
        """Figure 1's query for round t (0-based); ends at ``A: Option``."""
        return (
            f"You are currently playing round {t + 1}.{PARA}"
            f"Q: Which Option do you choose, {_options_or(self.labels)}?{PARA}{ANSWER_STEM}"
        )

    def tom_query(self, t: int, my_action: int | None = None) -> str:
        """Literal-ToM query for round t (0-based); ends at ``... chose Option``.

        agent_first (Figure 2) needs the agent's action of this round; partner_first (Figure 3)
        is asked before it. Both are exact prefixes of the round line that follows.
        """
        if self.order == "agent_first":
            if my_action is None:
                raise InputError("the agent-first ToM prompt needs this round's action")
            return f"In round {t + 1}, you chose Option {self.labels[my_action]} and the other player chose Option"
        return f"In round {t + 1}, the other player chose Option"

    # -- chat (the choice policy; module doc) ---------------------------------------------------
    def chat_action_question(self, t: int) -> str:
        """Figure 1's query for round t without its answer stem: the end of the user's message."""
        return f"You are currently playing round {t + 1}.{PARA}Q: Which Option do you choose, {_options_or(self.labels)}?"

    def chat_tom_question(self, t: int, my_action: int | None = None) -> str:
        """The literal-ToM question of round t: agent first (the turn after the agent's answer,
        told its action) or partner first (the end of the user's message)."""
        if self.order == "agent_first":
            if my_action is None:
                raise InputError("the agent-first ToM prompt needs this round's action")
            return (f"In round {t + 1}, you chose Option {self.labels[my_action]}.{PARA}"
                    "Q: Which Option did you think the other player chose?")
        return (f"You are currently playing round {t + 1}.{PARA}"
                "Q: Which Option do you think the other player will choose in this round?")

    def chat_answer(self, action: int) -> str:
        """The assistant's answer turn for ``action``: ``A: Option J``."""
        return ANSWER_STEM + self.continuations[action]


Message = tuple[str, str]


def flatten(messages: tuple[Message, ...], stem: str = "") -> str:
    """A conversation as one text, each turn headed by its role (``[user]``, ``[assistant]``),
    then ``stem``: what records show and requests carry as ``prompt`` where no backend rendered
    the conversation with its template."""
    return PARA.join(f"[{role}]\n{content}" for role, content in messages) + (PARA + "[assistant]\n" + stem if stem else "")


class PromptHistory:
    """An episode's growing prompt: ``header + round lines``; queries are appended on demand."""

    def __init__(self, templates: LMPrompts) -> None:
        self.templates = templates
        self.text = templates.header()
        self.t = 0  # rounds recorded so far

    def add_round(self, my_action: int, partner_action: int) -> None:
        if self.templates.history:
            self.text += self.templates.round_line(self.t, my_action, partner_action)
        self.t += 1

    def action_prompt(self) -> str:
        return self.text + self.templates.action_query(self.t)

    def tom_prompt(self, my_action: int | None = None) -> str:
        return self.text + self.templates.tom_query(self.t, my_action)

    # chat: conversations scored after the stem ANSWER_STEM (module doc)
    def chat_action_messages(self) -> tuple[Message, ...]:
        return (("user", self.text + self.templates.chat_action_question(self.t)),)

    def chat_tom_messages(self, my_action: int | None = None,
                          after: tuple[Message, ...] = ()) -> tuple[Message, ...]:
        """Agent first: ``after`` (the action's conversation) + the answer ``A: Option J`` + the
        question; partner first: a conversation of its own."""
        q = self.templates.chat_tom_question(self.t, my_action)
        if my_action is not None and self.templates.order == "agent_first":
            return (*after, ("assistant", self.templates.chat_answer(my_action)), ("user", q))
        return (("user", self.text + q),)


def action_prompt(game: RepeatedGame, history: list[tuple[int, int]], label_set: str = "neutral",
                  T: int = T_DEFAULT) -> str:
    """Figure 1's prompt for the round after ``history`` ((my_action, partner_action) pairs)."""
    h = PromptHistory(LMPrompts(game, label_set, T, "agent_first"))
    for a, b in history:
        h.add_round(a, b)
    return h.action_prompt()


def tom_prompt(game: RepeatedGame, history: list[tuple[int, int]], label_set: str = "neutral",
               T: int = T_DEFAULT, variant: str = "agent_first", my_action: int | None = None) -> str:
    """Figure 2 (agent_first, needs ``my_action``) or Figure 3 (partner_first) prompt."""
    h = PromptHistory(LMPrompts(game, label_set, T, variant))
    for a, b in history:
        h.add_round(a, b)
    return h.tom_prompt(my_action)
