"""CHBench prompt templates (paper Appendix A.1, Figures 6-13), one builder per section.

The paper's templates are reproduced with its headings ("Game Rules:", "Historical Game Records:",
"Conversations:", "Question:", "Your Choice:"), its wording (including "**not**" and "!!!") and its
numbered actions 1..n. What the paper leaves open, decided here:

- ``(1,...,n)`` is written out, e.g. ``(1, 2, 3)``; "n × m possible outcomes" as the number.
- Historical records (not printed in the paper): one line per earlier round, ``Round 3: you chose
  2 and your opponent chose 1; you received 5 points and your opponent received 0 points``, joined
  by ``.\\n`` (the template adds the final period). A round where a player gave no valid action
  says so. Round 1 of a memory prompt says ``No rounds have been played yet``.
- Names (the paper assigns distinct names but does not print them): the agent is ``Alex``, the
  advisor ``Sam``. Conversations are lines ``Alex: ...`` / ``Sam: ...``.
- Consultation and response prompts end with ``Your response:`` so a raw model knows where its
  message starts (the decision prompt's own stem is the paper's ``Your choice is :``).
- Chat & memory before a review has been held: ``After 10 rounds:`` / ``After 20 rounds:`` are
  followed by nothing, as the template with an empty parameter reads.

Prompts only grow at the end of the records section between rounds (records are joined, the query
follows), so a prefix-reusing backend evaluates only each round's new line under full memory.

Chat (``--chat``): the paper's templates have no system message, so none is sent; a prompt with
no advisor session is one user message holding the template above, verbatim. Advisor sessions
become real turns (:func:`chat_messages`): in each speaker's conversation its own messages are
assistant turns and the other's are user turns, verbatim (no ``Sam:`` prefix: the role says who
speaks, and a prefixed turn taught SmolLM2 to open its own messages with the other's name). A
session opens with a user turn holding what the template
shows before the conversation (the rules and, under chat & memory, the records at that time, the
Conversations intro) and its Question, without the ``Your response:`` stem (the assistant's turn
is the response); a later review (chat & memory) opens with the records at that time and the
Question (the ``After 10 rounds:`` labels are left out: the records say when it is). The decision
after sessions is the last user turn: the advisor's last message, then the template's remaining
sections (the records under chat & memory, the Question, ``Your Choice:`` and its stem). Roles
alternate user/assistant, as strict chat templates require.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from stratbench.models.base import Message
from stratbench.suites.chbench.repeated import PastRound

MECHANISMS = ("baseline", "memory", "memory10", "chat", "chat_memory")
AGENT_NAME = "Alex"
ADVISOR_NAME = "Sam"
PARTIAL_MEMORY = 10
REVIEW_EVERY = 10
DECISION_STEM = "Your choice is :"
RESPONSE_STEM = "Your response:"
NOT_LINE = "Do **not** include any additional text, explanations, or characters in your response!!!"


def _num(x: float) -> str:
    x = float(x)
    return str(int(x)) if x.is_integer() else f"{x:g}"


def _options(n: int) -> str:
    return "(" + ", ".join(str(i + 1) for i in range(n)) + ")"


def game_rules(own: np.ndarray, opp: np.ndarray, rounds: int) -> str:
    """The "Game Rules" section from one player's side: own[i, j], opp[i, j] when it plays i."""
    n, m = own.shape
    lines = [
        f"You are going to play a two-player repeated game of {rounds} rounds. In each round, you have "
        f"{n} possible actions to choose from: {_options(n)}, resulting in {n * m} possible outcomes:"
    ]
    k = 0
    for i in range(n):
        for j in range(m):
            k += 1
            lines.append(f"[{k}] If you choose {i + 1} and your opponent chooses {j + 1}, you will receive "
                         f"{_num(own[i, j])} points and your opponent will receive {_num(opp[i, j])} points.")
    return "Game Rules:\n\n" + "\n".join(lines)


def record_line(r: PastRound) -> str:
    if r.own_action is None or r.opp_action is None or r.own_payoff is None or r.opp_payoff is None:
        me = "you gave no valid choice" if r.own_action is None else f"you chose {r.own_action + 1}"
        op = ("your opponent gave no valid choice" if r.opp_action is None
              else f"your opponent chose {r.opp_action + 1}")
        return f"Round {r.round}: {me} and {op}; no points were awarded"
    return (f"Round {r.round}: you chose {r.own_action + 1} and your opponent chose {r.opp_action + 1}; "
            f"you received {_num(r.own_payoff)} points and your opponent received {_num(r.opp_payoff)} points")


def records_section(history: Sequence[PastRound], last: int | None = None) -> str:
    h = list(history)[-last:] if last else list(history)
    body = ".\n".join(record_line(r) for r in h) if h else "No rounds have been played yet"
    return f"Historical Game Records:\n\n{body}."


def conversation_text(turns: Sequence[tuple[str, str]]) -> str:
    return "\n".join(f"{who}: {text}" for who, text in turns)


def _advisor_intro(review: bool) -> str:
    s = (f"Your advisor {ADVISOR_NAME} is highly intelligent and always eager to help. He wants to assist you "
         "in analyzing how to participate in this game and achieve the best possible outcome through your "
         "discussions.")
    return s + (" You and your advisor hold a discussion review every 10 rounds." if review else "")


def _self_intro(review: bool) -> str:
    s = (f"You are {ADVISOR_NAME}, and you are highly intelligent and always eager to help. You want to assist "
         "your advisor in analyzing how to participate in this game and achieve the best possible outcome "
         "through your discussions.")
    return s + (" You and your advisor hold a discussion review every 10 rounds." if review else "")


@dataclass(frozen=True)
class Conversations:
    """Advisor sessions so far: `before` (chat, before play) or `reviews` (chat & memory)."""

    before: tuple[tuple[str, str], ...] = ()
    reviews: tuple[tuple[tuple[str, str], ...], ...] = ()


def conversations_section(mech: str, conv: Conversations, advisor_view: bool = False) -> str:
    intro = (_self_intro if advisor_view else _advisor_intro)(mech == "chat_memory")
    if mech == "chat":
        return f"Conversations:\n\n{intro}\n\n{conversation_text(conv.before)}"
    parts = [f"After {REVIEW_EVERY * (k + 1)} rounds:"
             + (conversation_text(conv.reviews[k]) if k < len(conv.reviews) else "") for k in range(2)]
    return f"Conversations:\n\n{intro}\n\n" + "\n\n".join(parts)


def _decision_query(n: int, round_: int) -> list[str]:
    return [f"Question:\n\nFor the No.{round_} round, please choose just one of the following options "
            f"by returning only one number from {_options(n)}.\n\n{NOT_LINE}",
            f"Your Choice:\n\n{DECISION_STEM}"]


def decision_prompt(own: np.ndarray, opp: np.ndarray, rounds: int, round_: int, mech: str,
                    history: Sequence[PastRound] = (), conv: Conversations | None = None) -> str:
    """Figures 6 (baseline), 9 (chat), 10 (memory; memory10 keeps the last 10 rounds), 13."""
    sections = [game_rules(own, opp, rounds)]
    if mech in ("memory", "memory10", "chat_memory"):
        sections.append(records_section(history, PARTIAL_MEMORY if mech == "memory10" else None))
    if mech in ("chat", "chat_memory"):
        sections.append(conversations_section(mech, conv or Conversations()))
    sections += _decision_query(own.shape[0], round_)
    return "\n\n".join(sections)


def _consultation_question(mech: str) -> str:
    rule = "rule" if mech == "chat" else "rules"
    return (f"Question:\n\nBased on the game {rule} and your conversation with your advisor, what would you "
            "like to say to him next? Your response must only contain what you want to say, and must be "
            f"within 50 words.\n\n{NOT_LINE}")


def consultation_prompt(own: np.ndarray, opp: np.ndarray, rounds: int, mech: str,
                        history: Sequence[PastRound], conv: Conversations, advisor: bool) -> str:
    """Figures 7/11 (the agent speaks to its advisor) and 8/12 (`advisor=True`: the advisor replies)."""
    sections = [game_rules(own, opp, rounds)]
    if mech == "chat_memory":
        sections.append(records_section(history))
    sections.append(conversations_section(mech, conv, advisor_view=advisor))
    sections.append(_consultation_question(mech))
    sections.append(RESPONSE_STEM)
    return "\n\n".join(sections)


# ----------------------------------------------------------------------------- chat conversations


def sessions_of(mech: str, conv: Conversations) -> tuple[tuple[tuple[str, str], ...], ...]:
    """The advisor sessions held so far, in order (chat: the one before play, once held)."""
    if mech == "chat":
        return (conv.before,) if conv.before else ()
    if mech == "chat_memory":
        return conv.reviews
    return ()


def session_opener(own: np.ndarray, opp: np.ndarray, rounds: int, mech: str, history: Sequence[PastRound],
                   session: int, advisor: bool) -> str:
    """Chat: the user turn that opens advisor session `session` (0-based) for one speaker; under
    chat & memory session k is held after ``10 (k + 1)`` rounds and shows those rounds' records."""
    sections = []
    if session == 0:
        sections.append(game_rules(own, opp, rounds))
    if mech == "chat_memory":
        sections.append(records_section(list(history)[: REVIEW_EVERY * (session + 1)]))
    if session == 0:
        intro = (_self_intro if advisor else _advisor_intro)(mech == "chat_memory")
        sections.append(f"Conversations:\n\n{intro}")
    sections.append(_consultation_question(mech))
    return "\n\n".join(sections)


def chat_messages(own: np.ndarray, opp: np.ndarray, rounds: int, mech: str, history: Sequence[PastRound],
                  sessions: Sequence[Sequence[tuple[str, str]]], speaker: str, final: str = "") -> tuple[Message, ...]:
    """Chat: `speaker`'s conversation (``AGENT_NAME`` or ``ADVISOR_NAME``) through the advisor
    `sessions` (each opened by :func:`session_opener`), ending with a user turn that holds what is
    pending (a session's opener, the other speaker's last message) and `final`. Its own messages
    are assistant turns, the other's user turns."""
    msgs: list[Message] = []
    pending: list[str] = []
    for k, turns in enumerate(sessions):
        pending.append(session_opener(own, opp, rounds, mech, history, k, advisor=speaker == ADVISOR_NAME))
        for who, text in turns:
            if who == speaker:
                msgs += [("user", "\n\n".join(pending)), ("assistant", text)]
                pending = []
            else:
                pending.append(text)
    if final:
        pending.append(final)
    msgs.append(("user", "\n\n".join(pending)))
    return tuple(msgs)


def decision_messages(own: np.ndarray, opp: np.ndarray, rounds: int, round_: int, mech: str,
                      history: Sequence[PastRound] = (), conv: Conversations | None = None) -> tuple[Message, ...]:
    """Chat: the decision as the agent's conversation. With no advisor session (baseline, memory,
    memory10, chat & memory before its first review) it is one user message: :func:`decision_prompt`.
    After sessions, their turns and then a user turn with the advisor's last message and the
    template's sections after the conversation."""
    conv = conv or Conversations()
    sessions = sessions_of(mech, conv)
    if not sessions:
        return (("user", decision_prompt(own, opp, rounds, round_, mech, history, conv)),)
    final = [records_section(history)] if mech == "chat_memory" else []
    final += _decision_query(own.shape[0], round_)
    return chat_messages(own, opp, rounds, mech, history, sessions, AGENT_NAME, "\n\n".join(final))


def consultation_messages(own: np.ndarray, opp: np.ndarray, rounds: int, mech: str,
                          history: Sequence[PastRound], conv: Conversations, advisor: bool) -> tuple[Message, ...]:
    """Chat: the conversation of the speaker about to talk in the session in progress — `conv`'s
    last session (chat: ``before``, chat & memory: the last review), possibly still empty — the
    agent (`advisor=False`) or its advisor."""
    sessions = (conv.before,) if mech == "chat" else conv.reviews
    return chat_messages(own, opp, rounds, mech, history, sessions, ADVISOR_NAME if advisor else AGENT_NAME)
