"""TMGBench: the 144 Robinson–Goforth 2×2 games (classic and story settings, atomic and complex forms).

Modules: ``games`` (the 144 games and their grid), ``stories`` (story files), ``prompts`` (the
paper's prompts), ``answers`` (answer sets, read without executing anything), ``metrics`` (PAR, ID,
BD, SD), ``heatmaps`` (the grid figures), ``config`` (run settings, game selection, shards),
``records`` (the result files' schema), ``run`` (atomic runs), ``complex`` / ``complex_run``
(sequential, parallel and nested tasks), ``stories_gen`` (story generation) and ``suite`` (the
registered suites). They import the core (games.normal_form, solvers, models, runner, render,
stats, seeding, errors) and each other, never another suite, the workflows, the report or the CLI.
This file imports nothing.
"""
