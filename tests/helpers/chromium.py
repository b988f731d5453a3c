"""Headless Chromium for the report tests: find the binary (Debian's `chromium`; tests skip only
when none exists — `make test` installs it where apt-get is available) and run it on a page."""

from __future__ import annotations

import shutil
import subprocess
import tempfile


def chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome", "chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


def run_chromium(binary: str, *args: str) -> subprocess.CompletedProcess:
    with tempfile.TemporaryDirectory() as profile:
        return subprocess.run(
            [binary, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             f"--user-data-dir={profile}", "--enable-logging=stderr", "--v=0", "--hide-scrollbars", *args],
            capture_output=True, text=True, timeout=120, check=False,
        )


def console_lines(stderr: str) -> list[str]:
    """Chromium's log lines of page errors: every console message is logged as CONSOLE."""
    return [line for line in stderr.splitlines() if ":CONSOLE" in line or "Uncaught" in line]
