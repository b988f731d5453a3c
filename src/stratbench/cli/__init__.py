"""The `stratbench` command line: parses flags, calls the library, prints results. ``main`` is the
root and error boundary; each command group is one module with `register(app)` (suite groups are
named by their suite in the registry); ``options`` declares the shared options once. The CLI may
import everything below it; nothing imports the CLI."""
