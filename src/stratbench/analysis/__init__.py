"""Per-decision metrics of suites (zero-sum metrics, TMGBench metrics); moving into their suites."""
