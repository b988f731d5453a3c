"""CHBench prompts: the paper's decision and advisor prompts under each mechanism."""

from __future__ import annotations

from stratbench.suites.chbench.catalogue import build_catalogue
from stratbench.suites.chbench.prompts import (
    Conversations,
    consultation_prompt,
    decision_prompt,
)
from stratbench.suites.chbench.repeated import PastRound

PD = build_catalogue()[0].game  # prisoner's dilemma, A = [[3, 0], [5, 1]]


def test_baseline_decision_prompt_follows_figure_6():
    own, opp = PD.payoff_row, PD.payoff_col
    p = decision_prompt(own, opp, 30, 7, "baseline")
    assert p.startswith("Game Rules:\n\nYou are going to play a two-player repeated game of 30 rounds. "
                        "In each round, you have 2 possible actions to choose from: (1, 2), resulting in 4 possible outcomes:")
    assert "[2] If you choose 1 and your opponent chooses 2, you will receive 0 points and your opponent will receive 5 points." in p
    assert "For the No.7 round, please choose just one of the following options by returning only one number from (1, 2)." in p
    assert p.endswith("Your Choice:\n\nYour choice is :")
    assert "Historical" not in p and "Conversations" not in p


def test_memory_prompts_full_and_partial_and_prefix_growth():
    own, opp = PD.payoff_row, PD.payoff_col
    hist = [PastRound(t, t % 2, 0, float(own[t % 2, 0]), float(opp[t % 2, 0])) for t in range(1, 13)]
    full = decision_prompt(own, opp, 30, 13, "memory", hist)
    part = decision_prompt(own, opp, 30, 13, "memory10", hist)
    assert "Round 1: you chose 2 and your opponent chose 1; you received 5 points" in full
    assert "Round 1:" not in part and "Round 2:" not in part and "Round 3:" in part and "Round 12:" in part
    first = decision_prompt(own, opp, 30, 1, "memory", [])
    assert "No rounds have been played yet." in first
    # the part before the query only grows: round t's prompt up to its records is a prefix of t+1's
    a = decision_prompt(own, opp, 30, 12, "memory", hist[:11])
    cut = a.index(".\n\nQuestion:")
    assert full.startswith(a[:cut])
    missing = decision_prompt(own, opp, 30, 2, "memory", [PastRound(1, None, 0, None, None)])
    assert "Round 1: you gave no valid choice and your opponent chose 1; no points were awarded." in missing


def test_chat_prompts_have_conversations_and_review_sections():
    own, opp = PD.payoff_row, PD.payoff_col
    conv = Conversations(before=(("Alex", "What should I do?"), ("Sam", "Defect.")))
    p = decision_prompt(own, opp, 30, 3, "chat", conv=conv)
    assert "Your advisor Sam is highly intelligent" in p and "Alex: What should I do?\nSam: Defect." in p
    cm = decision_prompt(own, opp, 30, 15, "chat_memory", [], Conversations(reviews=(conv.before,)))
    assert "hold a discussion review every 10 rounds" in cm
    assert "After 10 rounds:Alex: What should I do?" in cm and "After 20 rounds:\n\nQuestion:" in cm
    adv = consultation_prompt(own, opp, 30, "chat", [], conv, advisor=True)
    assert "You are Sam, and you are highly intelligent" in adv and adv.endswith("Your response:")
    assert "what would you like to say to him next?" in adv


def _alternates(msgs):
    roles = [r for r, _ in msgs]
    assert roles[0] == "user" and roles[-1] == "user"
    assert all(a != b for a, b in zip(roles, roles[1:])), roles  # strict templates need alternation


def test_chat_decision_without_sessions_is_the_template_as_one_user_message():
    from stratbench.suites.chbench.prompts import decision_messages

    own, opp = PD.payoff_row, PD.payoff_col
    hist = [PastRound(t, 0, 1, 0.0, 5.0) for t in range(1, 4)]
    for mech in ("baseline", "memory", "memory10", "chat", "chat_memory"):
        msgs = decision_messages(own, opp, 30, 4, mech, hist)
        assert msgs == (("user", decision_prompt(own, opp, 30, 4, mech, hist)),)


def test_chat_advisor_sessions_are_real_turns_in_each_speakers_conversation():
    from stratbench.suites.chbench.prompts import consultation_messages, decision_messages

    own, opp = PD.payoff_row, PD.payoff_col
    s1 = (("Alex", "What should I do?"), ("Sam", "Defect."), ("Alex", "Sure?"), ("Sam", "Yes, play 2."))
    # the agent's view after the session: its messages are assistant turns, the advisor's user turns
    msgs = decision_messages(own, opp, 30, 3, "chat", [], Conversations(before=s1))
    _alternates(msgs)
    assert [c for r, c in msgs if r == "assistant"] == ["What should I do?", "Sure?"]
    assert msgs[0][1].startswith("Game Rules:") and "Your advisor Sam is highly intelligent" in msgs[0][1]
    assert msgs[0][1].endswith("Do **not** include any additional text, explanations, or characters in your response!!!")
    assert "Your response:" not in msgs[0][1] and "Alex:" not in msgs[0][1]
    assert msgs[2] == ("user", "Defect.")
    assert msgs[-1][1].startswith("Yes, play 2.\n\nQuestion:\n\nFor the No.3 round")
    assert msgs[-1][1].endswith("Your Choice:\n\nYour choice is :")
    # mid-session: the advisor answers the agent's second question; its own first answer is an assistant turn
    adv = consultation_messages(own, opp, 30, "chat", [], Conversations(before=s1[:3]), advisor=True)
    _alternates(adv)
    assert "You are Sam, and you are highly intelligent" in adv[0][1] and adv[0][1].endswith("What should I do?")
    assert adv[1] == ("assistant", "Defect.") and adv[2] == ("user", "Sure?")
    first = consultation_messages(own, opp, 30, "chat", [], Conversations(), advisor=False)
    assert len(first) == 1 and "Conversations:" in first[0][1] and "what would you like to say" in first[0][1]


def test_chat_memory_reviews_open_with_the_records_of_their_time():
    from stratbench.suites.chbench.prompts import decision_messages

    own, opp = PD.payoff_row, PD.payoff_col
    hist = [PastRound(t, 1, 1, 1.0, 1.0) for t in range(1, 23)]
    r1 = (("Alex", "a1"), ("Sam", "b1"), ("Alex", "a2"), ("Sam", "b2"))
    r2 = (("Alex", "c1"), ("Sam", "d1"), ("Alex", "c2"), ("Sam", "d2"))
    msgs = decision_messages(own, opp, 30, 23, "chat_memory", hist, Conversations(reviews=(r1, r2)))
    _alternates(msgs)
    assert [c for r, c in msgs if r == "assistant"] == ["a1", "a2", "c1", "c2"]
    assert "Round 10:" in msgs[0][1] and "Round 11:" not in msgs[0][1]  # review 1: after 10 rounds
    second = msgs[4][1]  # the advisor's last word of review 1, then review 2's opener
    assert second.startswith("b2\n\nHistorical Game Records:") and "Round 20:" in second and "Round 21:" not in second
    assert "Game Rules" not in second and second.endswith("in your response!!!")
    assert msgs[-1][1].startswith("d2\n\nHistorical Game Records:") and "Round 22:" in msgs[-1][1]
    assert msgs[-1][1].endswith("Your choice is :")
