"""Workflows over suites: suite files, merging shards, comparing runs. They reach suites only through the registry (`stratbench.suites.SUITES`)."""
