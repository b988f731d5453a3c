"""The `stratbench` command line: parses flags, calls the library, prints results."""
