"""Shared rendering for the report and the suites' report views: an escaping HTML builder, figure helpers and the generic run-view pieces."""
