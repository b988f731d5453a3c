"""Reports and figures built from computed metrics (plots need the optional matplotlib dependency)."""
