"""The paper's text-generation prompts (Appendix C.1, Figures 4-18), built from the same
pieces as LM prompting (:class:`~stratbench.suites.tom.prompts.LMPrompts`).

Every prompt is self-contained: the game's rules and the whole interaction history are written out
again each round, and the strategy's extra state (plans and insights, Reflexion memories, the
oracle's action, the Social prediction) is inserted as paragraphs just before the question, as in
the figures. So every call is one prompt string - the same text for a raw model (completion) and
for a chat model (sent as one user message).

Wording, with ``{opts}`` = "Option J or Option F" and ``{fmt}`` = "<J or F>" (paragraphs separated
by a blank line):

* QA (Figure 4): "You are currently playing round 5." / "Which Option do you choose, {opts}?" /
  "Your answer MUST be formatted like:" / "Option: {fmt}"
* CoT (Figure 6): the QA question, then "Choose the best action by thinking step by step. Your
  answer MUST be formatted as:" / "Thoughts: <paragraph explaining your reasoning>" / "Option: {fmt}"
* Plans+Insights (Figure 8): "Your plans from the last round were: ..." / "Your insights from the
  last round were: ..." (omitted in round 1, where there are none), then CoT's instruction with
  "Plans: <paragraph explaining your plan moving forward>" / "Insights: <paragraph detailing any
  useful insights you can conclude>" / "Option: {fmt}"
* Reflexion (Figures 10-11): a reflection prompt ("Given the history of past experiences above,
  ..." / "Plan: <concise explanation of your plan moving forward>") after every round; the action
  prompt lists the last ``memory`` plans ("Your plan from two rounds ago was: ...", "Your plan from
  the previous round was: ...") and asks in CoT format.
* Oracle / Oracle+Max (Figures 14-15): "The other player will choose Option J. Which Option do you
  choose[ in response to maximize your points received], {opts}?" (RPS: "your score")
* Social (Figure 18): "Given that you predict the other player will choose Option J in round 5,
  which Option do you think is best to choose for you in this round, {opts}?" (no "You are
  currently playing" line, as in the figure).

Literal-ToM prompts: *agent-first* (Figures 5, 7, 9, 12: asked after the agent acted) end the
history with "In round 5, you chose Option J." and ask "Which Option did you think the other player
chose?" (CoT: "Which Option do you think the other player chose? Choose the best action by thinking
step by step. ..."). *Partner-first* (asked before the agent acts; the paper prints no generation
version, only LM's Figure 3): our construction by analogy with Figure 3 - history lines written
partner first, then "You are currently playing round 5." and "Which Option do you think the other
player will choose in this round?". Social's own prediction uses the partner-first QA prompt.

CoT 3-Shot (Figure 13) and S2A (Figures 16-17), with what the appendix leaves out reconstructed
minimally (each point is ours, not the paper's):

* CoT 3-Shot: the paragraph "Some example thought processes for superior play in this game
  include:" and three ``Thoughts: ...`` examples go between the rules and the history. Figure 13
  prints only the *literal-ToM* prompt (Figure 7 with the examples), and only for IBS with labels
  J/F; the action prompt here is Figure 6 with the same paragraphs at the same place. The paper
  says the examples "were customized to the actions space and payoff structure of each of the three
  games" without printing RPS's or IPD's, so every game's examples are generated from the three
  reasoning patterns of Figure 13 and the game's payoff matrix: (1) "The other player has picked
  Option a in every round so far ..." -> my myopic best response to a and its payoff; (2) "I chose
  Option m in the last round, so the other player is likely to choose Option q in response in order
  to maximize their reward" with q the partner's myopic best response to m, then my best response
  to q; (3) "... picked Option a four times in a row ...". a is the first label, m the second. For
  IBS this reproduces Figure 13 word for word; RPS says "I will receive a score of +1" (Appendix
  C.1's score wording).
* S2A: the rewrite prompt is the rules and history followed by Figure 16's instruction (action:
  "... useful for deciding which Option you should choose in the next round.") or Figure 17's
  (literal ToM: "... useful for guessing which Option the other player will choose in the next
  round."). "This output replaces the rules and history in the subsequent QA or CoT prompt": the
  answer prompt keeps the game's first paragraph ("You are playing a game repeatedly ... 100 rounds
  in total with the same player.", which is neither rules nor history), then the rewrite as one
  paragraph, then the QA (S2A) or CoT (S2A + CoT) question exactly as in Figures 4-7. A
  partner-first ToM rewrite sees the history written partner first. An empty rewrite leaves its
  paragraph out. Raw models get the answer stem ``Summary:`` after the rewrite prompt (the figure
  has no template); a raw model's rewrite is its continuation's first paragraph (they go on to
  write the next question and an answer), a chat model's the whole reply.

Raw (base) models get *completion-style* prompts: the paper's prompt, a blank line, and the
template's first field name as an answer stem (``Option:`` for QA, ``Thoughts:`` for CoT,
``Plans:`` for Plans+Insights, ``Plan:`` for the reflection), so the model's continuation is the
answer. The stem is put back in front of the generated text before parsing. Chat models get the
paper's prompt unchanged, as the user's message.

Chat conversations (``--chat``): which calls are turns of one conversation. Every round starts a
new conversation whose first user message is the paper's prompt with the rules and the history
written out as in the figures (the history stays user text). A call whose prompt, in the paper,
*tells the model its own answer of this round* is asked as the next user turn after that answer
(the accepted reply verbatim as the assistant's turn), and its turn carries only the figure's
paragraphs after the rules and history (:meth:`GenPrompts.tom_turn`, :meth:`GenPrompts.social_turn`,
:meth:`GenPrompts.reflexion_turn`); what the conversation already shows is not repeated. Per
strategy:

* QA, CoT, CoT 3-Shot, Plans+Insights, Reflexion - the agent-first literal-ToM prompt (Figures 5,
  7, 9, 12: "In round 5, you chose Option J." ...) is the turn after the action's answer. Figure
  9's "Your plans from this round were: ..." and Figure 12's memory paragraphs are left out of
  that turn: the plans are in the model's own answer just above, the memory in the action turn.
* Reflexion - the action prompt (Figure 11) is the turn after this round's reflection (Figure 10,
  asked over the same rules and history): the newest plan is the model's reply just above, so
  only the older plans (``--memory`` > 1) stay as "Your plan from two rounds ago was: ..."
  paragraphs. A reflection that did not parse is no turn: the action is asked as Figure 11's
  prompt on its own, with the memory as paragraphs.
* Social / Social LM - the action prompt (Figure 18: "Given that you predict the other player will
  choose Option J in round 5, ...") is the turn after the model's own prediction (the partner-first
  QA prompt; Social LM: the partner-first LM prompt scored, its argmax as the assistant's
  "A: Option J"). The conversation's history is therefore written partner first, as in the
  prediction's prompt.
* Plans+Insights - the previous round's plans and insights stay paragraphs of the next round's
  prompt (Figure 8): they come from another round, i.e. another conversation.
* Oracle / Oracle+Max - no follow-up: the action prompt tells the model the partner's actual
  action, so a ToM question in the same conversation would hold its answer; the ToM prompt is
  asked on its own, as for raw models.
* S2A / S2A + CoT - no follow-up either: "this output replaces the rules and history in the
  subsequent QA or CoT prompt", and in one conversation the rules and history would stay in view
  above the rewrite, which is what S2A removes. Each rewrite and each answer is a conversation
  of one user message, as with the paper's separate prompts.
* Partner-first ToM prompts (``--tom-variant partner_first``, asked before acting) are their own
  conversations: their history is written partner first, unlike the action's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from stratbench.suites.tom.games import RepeatedGame
from stratbench.suites.tom.prompts import PARA, LMPrompts, _pts, _score

QA_FORMAT = "Your answer MUST be formatted like:"
COT_INSTRUCTION = "Choose the best action by thinking step by step. Your answer MUST be formatted as:"
THOUGHTS_FIELD = "Thoughts: <paragraph explaining your reasoning>"
PLANS_FIELD = "Plans: <paragraph explaining your plan moving forward>"
INSIGHTS_FIELD = "Insights: <paragraph detailing any useful insights you can conclude>"
REFLECTION_INSTRUCTION = (
    "Given the history of past experiences above, think about the strategy you implemented and devise "
    "a concise new plan of action that accounts for any mistakes with reference to specific actions "
    "that you should have taken. For example, if you tried X and Y but forgot Z, then devise a plan to "
    "achieve Z with environment-specific actions. You will need this later when you are solving the "
    "same task. Your answer MUST be formatted as:"
)
REFLECTION_FIELD = "Plan: <concise explanation of your plan moving forward>"
SHOTS_INTRO = "Some example thought processes for superior play in this game include:"
S2A_INSTRUCTION = (
    "Given the game rules and limited interaction history while playing with the other player described "
    "above, extract a concise, unbiased, and self-contained summary that would be useful for "
)
S2A_ACTION_GOAL = "deciding which Option you should choose in the next round."
S2A_TOM_GOAL = "guessing which Option the other player will choose in the next round."
S2A_STEM = "Summary:"
"""Answer stem of the S2A rewrite for raw models (our addition: Figures 16-17 have no template)."""

_AGO = {2: "two", 3: "three", 4: "four", 5: "five", 6: "six", 7: "seven", 8: "eight", 9: "nine"}


@dataclass(frozen=True)
class Prompt:
    """One prompt: ``text`` is the paper's wording; ``stem`` the answer stem for raw models."""

    text: str
    stem: str

    def render(self, chat: bool) -> str:
        """What is sent: the text (chat), or the text, a blank line and the stem (completion)."""
        return self.text if chat else self.text + PARA + self.stem


def memory_lines(plans: Sequence[str]) -> list[str]:
    """Reflexion memories, oldest first ("Your plan from two rounds ago was: ...")."""
    n = len(plans)
    out = []
    for i, plan in enumerate(plans):
        ago = n - i
        when = "the previous round" if ago == 1 else f"{_AGO.get(ago, str(ago))} rounds ago"
        out.append(f"Your plan from {when} was: {plan}")
    return out


class GenPrompts:
    """The generation prompts for one game, label set, horizon and ablation setting.

    ``rounds`` arguments are the finished rounds as (my_action, partner_action) pairs; the round
    being played is ``len(rounds)`` (0-based).
    """

    def __init__(self, game: RepeatedGame, label_set: str = "neutral", T: int = 100,
                 payoffs: bool = True, history: bool = True) -> None:
        self.agent_first = LMPrompts(game, label_set, T, "agent_first", payoffs, history)
        self.partner_first = LMPrompts(game, label_set, T, "partner_first", payoffs, history)
        self.game = game

    @property
    def labels(self) -> tuple[str, ...]:
        return self.agent_first.labels

    # -- pieces -------------------------------------------------------------------------------
    def _context(self, rounds: Sequence[tuple[int, int]], order: str = "agent_first", shots: bool = False,
                 summary: str | None = None) -> str:
        """Rules and history; with ``shots`` Figure 13's examples between them; with ``summary``
        (S2A) the first paragraph and the rewrite instead of rules and history."""
        tpl = self.agent_first if order == "agent_first" else self.partner_first
        if summary is not None:
            return PARA.join([tpl.intro(), *([summary] if summary.strip() else [])]) + PARA
        examples = PARA.join([SHOTS_INTRO, *self.shot_examples()]) + PARA if shots else ""
        return tpl.header() + examples + tpl.history_text(list(rounds))

    def shot_examples(self) -> list[str]:
        """CoT 3-Shot's three worked examples (Figure 13 for IBS; other games: see the module doc)."""
        g, L = self.game, self.labels
        a, m = 0, 1

        def respond(b: int) -> str:
            mine = g.best_response(b)
            x = g.payoff_me[mine, b]
            gain = (f"I will receive a score of {_score(x)}" if g.score_wording else f"I will win {_pts(x)} points")
            return f"If they choose Option {L[b]}, my best response is Option {L[mine]}. In that case, {gain}."

        q = int(np.argmax(g.payoff_partner[m, :]))  # the partner's myopic best response to my m
        return [
            (f"Thoughts: The other player has picked Option {L[a]} in every round so far, so it is logical "
             f"to assume that they will do so again. {respond(a)}"),
            (f"Thoughts: I chose Option {L[m]} in the last round, so the other player is likely to choose "
             f"Option {L[q]} in response in order to maximize their reward. {respond(q)}"),
            (f"Thoughts: The other player has picked Option {L[a]} four times in a row, so they are most "
             f"likely to choose Option {L[a]} again. {respond(a)}"),
        ]

    def _choose(self, rounds: Sequence[tuple[int, int]]) -> str:
        return f"Which Option do you choose, {self.agent_first.options_or()}?"

    def _option_field(self) -> str:
        return f"Option: {self.agent_first.answer_format()}"

    def _current(self, rounds: Sequence[tuple[int, int]]) -> str:
        return f"You are currently playing round {len(rounds) + 1}."

    def _qa(self, ctx: str, paragraphs: list[str]) -> Prompt:
        return Prompt(ctx + PARA.join([*paragraphs, QA_FORMAT, self._option_field()]), "Option:")

    def _cot(self, ctx: str, paragraphs: list[str], fields: list[str], stem: str) -> Prompt:
        return Prompt(ctx + PARA.join([*paragraphs, COT_INSTRUCTION, *fields, self._option_field()]), stem)

    # -- action prompts -----------------------------------------------------------------------
    def qa(self, rounds: Sequence[tuple[int, int]]) -> Prompt:
        """Figure 4."""
        return self._qa(self._context(rounds), [self._current(rounds), self._choose(rounds)])

    def cot(self, rounds: Sequence[tuple[int, int]]) -> Prompt:
        """Figure 6."""
        return self._cot(self._context(rounds), [self._current(rounds), self._choose(rounds)],
                         [THOUGHTS_FIELD], "Thoughts:")

    def cot3(self, rounds: Sequence[tuple[int, int]]) -> Prompt:
        """CoT 3-Shot: Figure 6 with Figure 13's examples after the rules."""
        return self._cot(self._context(rounds, shots=True), [self._current(rounds), self._choose(rounds)],
                         [THOUGHTS_FIELD], "Thoughts:")

    def s2a_rewrite(self, rounds: Sequence[tuple[int, int]], target: str = "action",
                    order: str = "agent_first") -> Prompt:
        """S2A's rewrite of the rules and history: Figure 16 (``target="action"``) or 17 ("tom")."""
        goal = S2A_ACTION_GOAL if target == "action" else S2A_TOM_GOAL
        return Prompt(self._context(rounds, order) + S2A_INSTRUCTION + goal, S2A_STEM)

    def s2a_action(self, rounds: Sequence[tuple[int, int]], summary: str, style: str = "qa") -> Prompt:
        """S2A's answer prompt: Figure 4 (``style="qa"``) or 6 ("cot") with the rewrite in place of
        the rules and history."""
        ctx = self._context(rounds, summary=summary)
        lead = [self._current(rounds), self._choose(rounds)]
        if style == "cot":
            return self._cot(ctx, lead, [THOUGHTS_FIELD], "Thoughts:")
        return self._qa(ctx, lead)

    def plans_insights(self, rounds: Sequence[tuple[int, int]], plans: str | None,
                       insights: str | None) -> Prompt:
        """Figure 8; ``plans``/``insights`` from the previous round (None in round 1)."""
        extra = []
        if plans is not None:
            extra.append(f"Your plans from the last round were: {plans}")
        if insights is not None:
            extra.append(f"Your insights from the last round were: {insights}")
        return self._cot(self._context(rounds), [*extra, self._current(rounds), self._choose(rounds)],
                         [PLANS_FIELD, INSIGHTS_FIELD], "Plans:")

    def reflection(self, rounds: Sequence[tuple[int, int]]) -> Prompt:
        """Figure 10: the reflection module, asked after a round's feedback."""
        return Prompt(self._context(rounds) + PARA.join([REFLECTION_INSTRUCTION, REFLECTION_FIELD]), "Plan:")

    def reflexion(self, rounds: Sequence[tuple[int, int]], memory: Sequence[str]) -> Prompt:
        """Figure 11 with the last ``len(memory)`` plans."""
        return self._cot(self._context(rounds),
                         [*memory_lines(memory), self._current(rounds), self._choose(rounds)],
                         [THOUGHTS_FIELD], "Thoughts:")

    def oracle(self, rounds: Sequence[tuple[int, int]], partner_action: int, maximize: bool) -> Prompt:
        """Figures 14 (Oracle) and 15 (Oracle+Max): told the partner's actual next action."""
        lab = self.labels[partner_action]
        opts = self.agent_first.options_or()
        if maximize:
            what = "your score" if self.game.score_wording else "your points received"
            q = f"The other player will choose Option {lab}. Which Option do you choose in response to maximize {what}, {opts}?"
        else:
            q = f"The other player will choose Option {lab}. Which Option do you choose, {opts}?"
        return self._qa(self._context(rounds), [self._current(rounds), q])

    def social(self, rounds: Sequence[tuple[int, int]], predicted: int) -> Prompt:
        """Figure 18: act given the model's own prediction of the partner's action."""
        t = len(rounds) + 1
        q = (f"Given that you predict the other player will choose Option {self.labels[predicted]} in "
             f"round {t}, which Option do you think is best to choose for you in this round, "
             f"{self.agent_first.options_or()}?")
        return self._qa(self._context(rounds), [q])

    # -- literal-ToM prompts ------------------------------------------------------------------
    def tom(self, rounds: Sequence[tuple[int, int]], my_action: int | None, style: str = "qa",
            extra: Sequence[str] = (), shots: bool = False, summary: str | None = None) -> Prompt:
        """Predict the partner's action of the current round.

        ``my_action`` given: agent-first (Figures 5, 7, 9, 12); None: partner-first (asked before
        acting; history lines partner first as in Figure 3). ``style`` "qa" or "cot" (Figure 7);
        ``extra`` paragraphs (plans/insights, Reflexion memories) go before the question;
        ``shots``: CoT 3-Shot's examples after the rules (Figure 13); ``summary``: S2A's rewrite
        (Figure 17) in place of the rules and history.
        """
        ctx = self._context(rounds, "agent_first" if my_action is not None else "partner_first", shots, summary)
        return self._tom_body(ctx, rounds, my_action, style, extra)

    def _tom_body(self, ctx: str, rounds: Sequence[tuple[int, int]], my_action: int | None, style: str,
                  extra: Sequence[str]) -> Prompt:
        t = len(rounds) + 1
        if my_action is not None:
            lead = [*extra, f"In round {t}, you chose Option {self.labels[my_action]}."]
            q_qa = "Which Option did you think the other player chose?"
            q_cot = "Which Option do you think the other player chose?"
        else:
            lead = [*extra, f"You are currently playing round {t}."]
            q_qa = q_cot = "Which Option do you think the other player will choose in this round?"
        if style == "cot":
            body = PARA.join([*lead, f"{q_cot} {COT_INSTRUCTION}", THOUGHTS_FIELD, self._option_field()])
            return Prompt(ctx + body, "Thoughts:")
        return self._qa(ctx, [*lead, q_qa])

    # -- chat follow-up turns (module doc: "Chat conversations") -------------------------------
    def tom_turn(self, rounds: Sequence[tuple[int, int]], my_action: int, style: str = "qa") -> Prompt:
        """The agent-first ToM prompt as the turn after the action's answer: Figure 5 (``qa``) or 7
        (``cot``) without the rules and history (and without Figure 9's / 12's extra paragraphs)."""
        return self._tom_body("", rounds, my_action, style, ())

    def social_turn(self, rounds: Sequence[tuple[int, int]], predicted: int) -> Prompt:
        """Figure 18's question and template as the turn after the model's own prediction."""
        return Prompt(self.social(rounds, predicted).text[len(self._context(rounds)):], "Option:")

    def reflexion_turn(self, rounds: Sequence[tuple[int, int]], memory: Sequence[str]) -> Prompt:
        """Figure 11 as the turn after this round's reflection (``memory[-1]``, the reply above):
        the older plans, the round and the CoT question."""
        return self._cot("", [*memory_lines(memory)[:-1], self._current(rounds), self._choose(rounds)],
                         [THOUGHTS_FIELD], "Thoughts:")

    def plans_insights_extra(self, plans: str | None, insights: str | None, current: bool) -> list[str]:
        """Figure 9's "Your plans from this round were: ..." paragraphs (``current``), or the
        previous round's (partner-first ToM, asked before this round's plans exist)."""
        when = "this round" if current else "the last round"
        out = []
        if plans is not None:
            out.append(f"Your plans from {when} were: {plans}")
        if insights is not None:
            out.append(f"Your insights from {when} were: {insights}")
        return out
