"""The normal-form game type every suite shares (payoffs, labels, validation, JSON files). Core:
imports only errors. Suite-specific catalogues and generators live in their suites."""

from stratbench.games.normal_form import (
    MAX_ACTIONS,
    NormalFormGame,
    game_from_dict,
    game_to_dict,
    load_games,
    save_games,
)

__all__ = ["MAX_ACTIONS", "NormalFormGame", "game_from_dict", "game_to_dict", "load_games", "save_games"]
