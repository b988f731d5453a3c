"""Normal-form games: the type, JSON files, and random generators."""

from stratbench.games.normal_form import (
    MAX_ACTIONS,
    NormalFormGame,
    game_from_dict,
    game_to_dict,
    load_games,
    save_games,
)
from stratbench.games.generators import (
    BUCKETS,
    Bucket,
    game_rng,
    generate_bucket_game,
    generate_games,
    random_zero_sum,
)

__all__ = [
    "MAX_ACTIONS",
    "NormalFormGame",
    "game_from_dict",
    "game_to_dict",
    "load_games",
    "save_games",
    "BUCKETS",
    "Bucket",
    "game_rng",
    "generate_bucket_game",
    "generate_games",
    "random_zero_sum",
]
