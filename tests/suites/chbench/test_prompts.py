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
