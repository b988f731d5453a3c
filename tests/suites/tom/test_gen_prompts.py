"""The text-generation strategies' prompts (QA, CoT, CoT 3-Shot, Social, Plans+Insights, Reflexion,
Oracle, Oracle+Max, S2A, S2A + CoT) against the paper's appendix figures."""

from __future__ import annotations

import asyncio
import re

import pytest

from stratbench.errors import InputError
from stratbench.suites.tom.games import IBS, IPD, RPS
from stratbench.suites.tom.gen_episodes import (
    GenSettings,
    arun_gen_episode,
)
from stratbench.suites.tom.gen_prompts import GenPrompts
from stratbench.suites.tom.strategies import (
    normalize_prompting,
)

IBS_HISTORY = [(0, 0), (1, 0), (0, 0), (0, 0)]  # the appendix's example: IBS, round 5 of 100


def play(model, game, partner, T, settings, seed=1):
    return asyncio.run(arun_gen_episode(model, game, partner, T, seed, settings))


# ------------------------------------------------------------------------------- prompt text
def test_qa_cot_and_tom_prompts_match_the_appendix_figures():
    P = GenPrompts(IBS, T=100)
    qa = P.qa(IBS_HISTORY).text
    assert qa.startswith("You are playing a game repeatedly with another player. In this game, you can choose "
                         "between Option J and Option F. You will play 100 rounds in total with the same player."
                         "\n\nThe rules of the game are as follows:\n\nIf you choose Option J and the other "
                         "player chooses Option J, then you win 10 points and the other player wins 7 points.")
    assert ("In round 2, you chose Option F and the other player chose Option J. Thus, you won 0 points and "
            "the other player won 0 points.\n\n") in qa
    assert qa.endswith("In round 4, you chose Option J and the other player chose Option J. Thus, you won 10 "
                       "points and the other player won 7 points.\n\nYou are currently playing round 5.\n\n"
                       "Which Option do you choose, Option J or Option F?\n\nYour answer MUST be formatted like:"
                       "\n\nOption: <J or F>")  # Figure 4
    assert P.cot(IBS_HISTORY).text.endswith(
        "You are currently playing round 5.\n\nWhich Option do you choose, Option J or Option F?\n\nChoose the "
        "best action by thinking step by step. Your answer MUST be formatted as:\n\nThoughts: <paragraph "
        "explaining your reasoning>\n\nOption: <J or F>")  # Figure 6
    assert P.tom(IBS_HISTORY, 0).text.endswith(
        "won 7 points.\n\nIn round 5, you chose Option J.\n\nWhich Option did you think the other player chose?"
        "\n\nYour answer MUST be formatted like:\n\nOption: <J or F>")  # Figure 5
    assert P.tom(IBS_HISTORY, 0, "cot").text.endswith(
        "In round 5, you chose Option J.\n\nWhich Option do you think the other player chose? Choose the best "
        "action by thinking step by step. Your answer MUST be formatted as:\n\nThoughts: <paragraph explaining "
        "your reasoning>\n\nOption: <J or F>")  # Figure 7
    pf = P.tom(IBS_HISTORY, None).text  # partner-first: history partner first, asked before acting
    assert "In round 2, the other player chose Option J and you chose Option F." in pf
    assert pf.endswith("You are currently playing round 5.\n\nWhich Option do you think the other player will "
                       "choose in this round?\n\nYour answer MUST be formatted like:\n\nOption: <J or F>")


def test_strategy_prompts_match_the_appendix_figures():
    P = GenPrompts(IBS, T=100)
    pi = P.plans_insights(IBS_HISTORY, "keep J", "they like J").text
    assert ("won 7 points.\n\nYour plans from the last round were: keep J\n\nYour insights from the last round "
            "were: they like J\n\nYou are currently playing round 5.") in pi
    assert pi.endswith("Your answer MUST be formatted as:\n\nPlans: <paragraph explaining your plan moving forward>"
                       "\n\nInsights: <paragraph detailing any useful insights you can conclude>\n\nOption: <J or F>")
    assert "Your plans from" not in P.plans_insights([], None, None).text  # round 1: nothing to recall
    refl = P.reflection(IBS_HISTORY).text
    assert refl.endswith("won 7 points.\n\nGiven the history of past experiences above, think about the strategy "
                         "you implemented and devise a concise new plan of action that accounts for any mistakes "
                         "with reference to specific actions that you should have taken. For example, if you tried "
                         "X and Y but forgot Z, then devise a plan to achieve Z with environment-specific actions. "
                         "You will need this later when you are solving the same task. Your answer MUST be "
                         "formatted as:\n\nPlan: <concise explanation of your plan moving forward>")  # Figure 10
    rx = P.reflexion(IBS_HISTORY, ["a", "b", "c"]).text  # Figure 11, three memories
    assert ("Your plan from three rounds ago was: a\n\nYour plan from two rounds ago was: b\n\nYour plan from "
            "the previous round was: c\n\nYou are currently playing round 5.") in rx
    assert P.oracle(IBS_HISTORY, 0, maximize=False).text.endswith(
        "You are currently playing round 5.\n\nThe other player will choose Option J. Which Option do you choose, "
        "Option J or Option F?\n\nYour answer MUST be formatted like:\n\nOption: <J or F>")  # Figure 14
    assert "Which Option do you choose in response to maximize your points received, Option J or Option F?" in \
        P.oracle(IBS_HISTORY, 0, maximize=True).text  # Figure 15
    soc = P.social(IBS_HISTORY, 1).text  # Figure 18 (no "You are currently playing" line)
    assert soc.endswith("won 7 points.\n\nGiven that you predict the other player will choose Option F in round 5, "
                        "which Option do you think is best to choose for you in this round, Option J or Option F?"
                        "\n\nYour answer MUST be formatted like:\n\nOption: <J or F>")
    ptom = P.tom(IBS_HISTORY, 0, extra=P.plans_insights_extra("p", "i", current=True)).text  # Figure 9
    assert "Your plans from this round were: p\n\nYour insights from this round were: i\n\nIn round 5, you chose Option J." in ptom


def test_ablations_labels_rps_wording_and_completion_stems():
    nopay = GenPrompts(IBS, payoffs=False).qa(IBS_HISTORY).text
    assert "rules of the game" not in nopay and "If you choose" not in nopay
    assert "Thus, you won 0 points" in nopay  # the received points stay in the history
    nohist = GenPrompts(IBS, history=False).qa(IBS_HISTORY).text
    assert "In round" not in nohist and "rules of the game" in nohist and "playing round 5." in nohist
    canon = GenPrompts(IPD, label_set="canonical").qa([(1, 0)]).text
    assert "choose between Option Cooperate and Option Defect" in canon and canon.endswith("Option: <Cooperate or Defect>")
    rps = GenPrompts(RPS).qa([(1, 0)])
    assert "then you receive a score of -1 and the other player receives a score of +1." in rps.text
    assert "Thus, you received a score of +1 and the other player received a score of -1." in rps.text
    assert rps.text.endswith("Option: <J, F or B>")
    assert rps.render(chat=True) == rps.text
    assert rps.render(chat=False) == rps.text + "\n\nOption:"
    assert GenPrompts(RPS).cot([]).render(False).endswith("\n\nThoughts:")
    assert GenPrompts(RPS).plans_insights([], None, None).render(False).endswith("\n\nPlans:")
    assert GenPrompts(RPS).reflection([]).render(False).endswith("\n\nPlan:")




# ------------------------------------------------------------------------------- CoT 3-Shot and S2A
FIGURE_13_EXAMPLES = (
    "you win 10 points and the other player wins 7 points.\n\nIf you choose Option J and the other player chooses "
    "Option F, then you win 0 points and the other player wins 0 points.\n\nIf you choose Option F and the other "
    "player chooses Option J, then you win 0 points and the other player wins 0 points.\n\nIf you choose Option F "
    "and the other player chooses Option F, then you win 7 points and the other player wins 10 points.\n\n"
    "Some example thought processes for superior play in this game include:\n\n"
    "Thoughts: The other player has picked Option J in every round so far, so it is logical to assume that they "
    "will do so again. If they choose Option J, my best response is Option J. In that case, I will win 10 points."
    "\n\nThoughts: I chose Option F in the last round, so the other player is likely to choose Option F in "
    "response in order to maximize their reward. If they choose Option F, my best response is Option F. In that "
    "case, I will win 7 points.\n\nThoughts: The other player has picked Option J four times in a row, so they "
    "are most likely to choose Option J again. If they choose Option J, my best response is Option J. In that "
    "case, I will win 10 points.\n\nIn round 1, you chose Option J and the other player chose Option J."
)
FIGURE_16 = ("Given the game rules and limited interaction history while playing with the other player described "
             "above, extract a concise, unbiased, and self-contained summary that would be useful for deciding "
             "which Option you should choose in the next round.")
FIGURE_17 = ("Given the game rules and limited interaction history while playing with the other player described "
             "above, extract a concise, unbiased, and self-contained summary that would be useful for guessing "
             "which Option the other player will choose in the next round.")
INTRO_IBS = ("You are playing a game repeatedly with another player. In this game, you can choose between Option J "
             "and Option F. You will play 100 rounds in total with the same player.")


def test_cot3_prompts_match_figure_13():
    P = GenPrompts(IBS, T=100)
    tom = P.tom(IBS_HISTORY, 0, "cot", shots=True).text  # Figure 13 as printed: Figure 7 + examples
    assert FIGURE_13_EXAMPLES in tom
    block = "\n\n".join(["Some example thought processes for superior play in this game include:",
                          *P.shot_examples()]) + "\n\n"
    assert tom == P.tom(IBS_HISTORY, 0, "cot").text.replace("In round 1,", block + "In round 1,", 1)
    act = P.cot3(IBS_HISTORY)  # the action prompt: Figure 6 with the same paragraphs at the same place
    assert FIGURE_13_EXAMPLES in act.text and act.stem == "Thoughts:"
    assert act.text == P.cot(IBS_HISTORY).text.replace("In round 1,", block + "In round 1,", 1)
    # examples for the other games: the game's own labels and (myopic) best responses and payoffs
    for game, label_set in ((RPS, "canonical"), (IPD, "canonical"), (RPS, "neutral")):
        ex = GenPrompts(game, label_set).shot_examples()
        labels = game.action_labels(label_set)
        assert len(ex) == 3 and all(e.startswith("Thoughts: ") for e in ex)
        for e in ex:
            b, mine = re.search(r"If they choose Option (\w+), my best response is Option (\w+)\.", e).groups()
            assert labels.index(mine) == game.best_response(labels.index(b))
    rps = GenPrompts(RPS, "canonical").shot_examples()
    assert "the other player is likely to choose Option Scissors in response" in rps[1]  # beats my Paper
    assert rps[0].endswith("my best response is Option Paper. In that case, I will receive a score of +1.")
    ipd = GenPrompts(IPD, "canonical").shot_examples()
    assert ipd[0].endswith("If they choose Option Cooperate, my best response is Option Defect. In that case, I will win 10 points.")
    pf = P.tom(IBS_HISTORY, None, "cot", shots=True).text  # partner-first ToM: examples there too
    assert "include:\n\nThoughts: The other player" in pf and "In round 1, the other player chose Option J" in pf
    assert normalize_prompting("CoT 3-shot") == normalize_prompting("cot+3shot") == "CoT3"
    with pytest.raises(InputError, match="no-payoffs"):
        GenSettings(prompting="CoT3", payoffs=False)


def test_s2a_prompts_match_figures_16_and_17():
    P = GenPrompts(IBS, T=100)
    rw = P.s2a_rewrite(IBS_HISTORY)
    assert rw.text == P.qa(IBS_HISTORY).text.split("You are currently playing")[0] + FIGURE_16  # Figure 16
    assert rw.render(chat=True) == rw.text and rw.render(chat=False) == rw.text + "\n\nSummary:"
    assert P.s2a_rewrite(IBS_HISTORY, "tom").text.endswith("other player won 7 points.\n\n" + FIGURE_17)
    pf = P.s2a_rewrite(IBS_HISTORY, "tom", "partner_first").text
    assert "In round 2, the other player chose Option J and you chose Option F." in pf and pf.endswith(FIGURE_17)
    # the rewrite replaces the rules and history in the QA (S2A) or CoT (S2A + CoT) prompt
    qa = P.s2a_action(IBS_HISTORY, "They always play J.")
    assert qa.text == (INTRO_IBS + "\n\nThey always play J.\n\nYou are currently playing round 5.\n\nWhich Option "
                       "do you choose, Option J or Option F?\n\nYour answer MUST be formatted like:\n\nOption: <J or F>")
    assert qa.stem == "Option:"
    cot = P.s2a_action(IBS_HISTORY, "They always play J.", "cot")
    assert cot.stem == "Thoughts:" and cot.text.endswith(P.cot(IBS_HISTORY).text.split("won 7 points.\n\n")[-1])
    assert "rules of the game" not in cot.text and "In round" not in cot.text
    tom = P.tom(IBS_HISTORY, 0, summary="J, always.").text  # Figure 5's question after the rewrite
    assert tom == (INTRO_IBS + "\n\nJ, always.\n\nIn round 5, you chose Option J.\n\nWhich Option did you think "
                   "the other player chose?\n\nYour answer MUST be formatted like:\n\nOption: <J or F>")
    assert P.tom(IBS_HISTORY, None, "cot", summary="x").text.startswith(INTRO_IBS + "\n\nx\n\nYou are currently playing round 5.")
    empty = P.s2a_action(IBS_HISTORY, "  ").text  # an empty rewrite leaves its paragraph out
    assert empty.startswith(INTRO_IBS + "\n\nYou are currently playing round 5.") and "\n\n\n" not in empty
    assert normalize_prompting("S2A") == "S2A" and normalize_prompting("S2A+CoT") == "S2ACoT"
    assert normalize_prompting("system-2-attention") == "S2A"
