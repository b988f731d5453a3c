"""The benchmark suites, each a library function that the CLI wraps."""
