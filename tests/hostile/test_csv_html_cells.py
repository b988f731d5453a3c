"""Text from users and models reaches CSVs and the HTML report as text: a label that a spreadsheet
would run as a formula (`=HYPERLINK(...)`) is written with a leading `'`, numbers stay numbers, and
bidirectional override characters (U+202E, "Trojan Source") are shown as their code points."""

from __future__ import annotations

import csv
import os
import subprocess
import sys

import pytest

from stratbench.render.csv_cells import csv_cell, csv_row
from stratbench.render.html import el, esc

LINK = '=HYPERLINK("http://evil.example","click")'


@pytest.mark.parametrize("value, want", [
    (LINK, "'" + LINK),
    ("+cmd|' /C calc'!A0", "'+cmd|' /C calc'!A0"),
    ("-2+3", "'-2+3"),
    ("@SUM(A1)", "'@SUM(A1)"),
    ("\t=1", "'\t=1"),
    ("\r=1", "'\r=1"),
    ("-", "'-"),
    # numbers, and text that is a plain number, are left alone: numeric columns stay numeric
    (-0.5, -0.5), (3, 3), (None, None), (True, True),
    ("-0.5", "-0.5"), ("+1e3", "+1e3"), ("0.25", "0.25"), (".5", ".5"), ("-3.", "-3."),
    # not numbers to a spreadsheet, though Python reads them: a formula there (fuzz 11 B M3)
    ("-inf", "'-inf"), ("-1_0", "'-1_0"), ("+nan", "'+nan"),
    # digits of another script are no number to a spreadsheet (fuzz 12 B M4: `\d` matched them)
    ("-٣", "'-٣"), ("+１", "'+１"),
    # ordinary text
    ("openai-compatible:fake", "openai-compatible:fake"), ("a=b", "a=b"), ("", ""),
])
def test_csv_cells(value, want):
    assert csv_cell(value) == want
    assert csv_row([value, -1.5]) == [want, -1.5]


def test_bidi_controls_are_shown_not_obeyed():
    assert esc("abc\u202efdp.exe") == "abc&lt;U+202E&gt;fdp.exe"
    assert el("td", "x\u2066y\u2069\u202a\u202d") == "<td>x&lt;U+2066&gt;y&lt;U+2069&gt;&lt;U+202A&gt;&lt;U+202D&gt;</td>"
    assert esc("\u05d0\u200f") == "\u05d0\u200f"  # a right-to-left mark in Hebrew text is ordinary text


def test_a_suite_files_labels_reach_runs_csv_and_the_report_neutralised(tmp_path):
    label = LINK + " \u202eevil"
    (tmp_path / "s.toml").write_text(
        f"models = [{{spec = \"random\", label = '{label}'}}]\n\n[nashgap]\nnum_games = 2\nnum_trials = 1\n")
    r = subprocess.run([sys.executable, "-m", "stratbench", "suite", "run", "s.toml", "--output-dir", "out",
                        "--quiet"], cwd=tmp_path, capture_output=True, text=True, timeout=300,
                       env=dict(os.environ, CI="1"))
    assert r.returncode == 0, r.stderr
    (suite,) = (tmp_path / "out").iterdir()
    rows = list(csv.DictReader((suite / "runs.csv").open(newline="")))
    assert rows and all(row["model"] == "'" + label for row in rows)
    assert all(float(row["value"]) == float(row["value"]) for row in rows if row["value"])  # numbers as written
    html = (suite / "report" / "index.html").read_text()
    assert "\u202e" not in html and "&lt;U+202E&gt;evil" in html
