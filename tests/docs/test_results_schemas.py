"""docs/results.md lists every key of every result file that has a schema definition in the code,
as the code documents it: its key tables are generated from the TypedDicts (schema_tables.py) and
must be the ones the code gives now. Regenerate with
`PYTHONPATH=src python tests/docs/schema_tables.py --write`."""

from __future__ import annotations

import difflib

import pytest
from schema_tables import RESULTS_MD, bases_of, documented, generate, keys_of, own_keys, schema_classes

TEXT = RESULTS_MD.read_text(encoding="utf-8")
DOCUMENTED = documented(TEXT)


def test_every_schema_of_the_code_has_its_table():
    missing = sorted(set(schema_classes()) - set(DOCUMENTED))
    assert missing == [], (f"add <!-- schema: NAME --> <!-- /schema --> to docs/results.md for {missing} and run "
                           "tests/docs/schema_tables.py --write")


def test_every_table_names_a_schema_of_the_code():
    assert sorted(set(DOCUMENTED) - set(schema_classes())) == []


@pytest.mark.parametrize("name", sorted(DOCUMENTED))
def test_the_documented_keys_are_the_schemas_keys(name):
    """Both directions: no key of the code left out, no key the code does not have. A class's
    table lists its own keys; the keys it inherits are in its bases' tables."""
    listed = DOCUMENTED[name]
    assert sorted(set(own_keys(name)) - listed) == [], f"{name}: keys of the code missing from docs/results.md"
    assert sorted(listed - set(own_keys(name))) == [], f"{name}: keys in docs/results.md the code does not have"
    inherited = set().union(*(DOCUMENTED.get(b, set()) for b in bases_of(name)))
    assert listed | inherited == keys_of(name), f"{name}: its table and its bases' do not cover its keys"


def test_the_tables_are_the_ones_the_code_gives():
    want = generate(TEXT)
    if want != TEXT:
        diff = "".join(difflib.unified_diff(TEXT.splitlines(True), want.splitlines(True), "docs/results.md",
                                            "generated", n=1))
        pytest.fail("docs/results.md's key tables differ from the code's schemas; run "
                    f"`PYTHONPATH=src python tests/docs/schema_tables.py --write`:\n{diff[:4000]}")
