"""The check catalog (checks/catalog.yaml) and the checks declared in code agree exactly."""

from __future__ import annotations

import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest

import checks
from strixwizard.checking.declare import ENTRY_FIELDS, CatalogError, _entry, catalog, node_check
from strixwizard.facts import NodeFacts
from strixwizard.model import Finding, Severity
from strixwizard.site import Site

ROOT = Path(__file__).resolve().parent.parent


def test_catalog_ids_are_exactly_the_registered_checks() -> None:
    registered = [c.id for c in checks.ALL]
    missing = sorted(set(registered) - set(catalog()))
    stale = sorted(set(catalog()) - set(registered))
    assert not missing, f"registered checks without a catalog entry: {missing}"
    assert not stale, f"catalog entries naming no registered check: {stale}"


@pytest.mark.parametrize("check_id", sorted(catalog()))
def test_every_entry_has_every_field_and_an_https_source(check_id: str) -> None:
    entry = catalog()[check_id]
    for name in ENTRY_FIELDS:
        if name not in ("fix", "sources", "severity"):
            assert str(getattr(entry, name)).strip(), f"{check_id}: {name} is empty"
    assert entry.sources and all(url.startswith("https://") for url in entry.sources), entry.sources
    assert len(entry.why) <= 160, f"{check_id}: `why` is one line; the detail goes to `matters`"


def test_each_check_takes_its_metadata_from_its_entry() -> None:
    for check in checks.ALL:
        entry = catalog()[check.id]
        assert all(getattr(check, name) == getattr(entry, name) for name in ENTRY_FIELDS), check.id


def _body(node: NodeFacts, site: Site) -> Iterator[Finding]:
    """A check that is never run."""
    yield from ()


def test_a_check_without_an_entry_is_an_error_naming_it() -> None:
    with pytest.raises(CatalogError) as caught:
        node_check("counters.rx_discards")(_body)
    message = str(caught.value)
    assert "'counters.rx_discards'" in message and "no entry in checks/catalog.yaml" in message
    assert "counters.rx_discards:\n  title:" in message  # a stub to paste


def test_metadata_left_in_a_decorator_says_where_it_goes_now() -> None:
    with pytest.raises(CatalogError) as caught:
        node_check("counters.rx_discards", title="No discards", why="drops cost retransmits",
                   severity=Severity.MEDIUM)(_body)
    message = str(caught.value)
    assert "'counters.rx_discards'" in message and "title=, why=, severity=" in message
    assert "  title: No discards\n  severity: medium\n" in message


@pytest.mark.parametrize(("raw", "says"), [
    ({"title": "t"}, "missing severity"),
    ({**dict.fromkeys(ENTRY_FIELDS, "x"), "sources": [], "severity": "bad", "fix": None},
     "severity"),
    ({**dict.fromkeys(ENTRY_FIELDS, "x"), "sources": [], "severity": "low", "colour": "red"},
     "unknown colour"),
])
def test_a_malformed_entry_is_an_error_naming_the_field(raw: dict[str, object], says: str) -> None:
    with pytest.raises(CatalogError, match=says):
        _entry("node.x", raw, "checks/catalog.yaml")


def test_the_catalog_ships_in_the_wheel() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "catalog.yaml" in config["tool"]["setuptools"]["package-data"]["checks"]
