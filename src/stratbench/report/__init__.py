"""`stratbench report`: one self-contained HTML page for a result folder or a folder of runs.

Modules: ``discover`` (find run and suite folders, read them without trusting them), ``sections``
(a run's section: the suite's own view, then figures, tables, totals, metadata, records),
``build`` (the page: overview, leaderboards, sections), ``plots`` (the leaderboard chart). It
reaches suites only through the registry (`stratbench.suites.SUITES`, each suite's
`report_view`) and imports the core (`render`, `runner`); never the workflows or the CLI.
"""
