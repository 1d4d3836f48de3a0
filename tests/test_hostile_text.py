"""Text from a node is data (issue 22): the hostile corpus (tests/support/hostile/strings.py) through
the plain CLI's one escaping function, the parsers that type what a node reports, `init`'s site
file, a bundle's site, and the deploy options that become lines of a unit. The wizard's side is
tests/test_hostile_text_tui.py, live nodes tests/test_hostile_text_lab.py."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from strixwizard.cli.terminal import VisibleStream, paint, terminal_text, visible
from strixwizard.facts.netdev import ifname_problem, parse_ip_addr_json
from strixwizard.site import NodeSpec, address_problem, load_site
from tests.support.cli import run_cli
from tests.support.hostile import strings
from tests.support.hostile.bundles import hostile_bundle

KERNEL = "6.1.0[/]\x1b[2J"
FIRMWARE = "[@click=app.screenshot('owned.conf','/tmp')]4.91[/]\x1b]52;c;cHduZWQ=\x07\x1b]0;PWNED\x07"


# -- the one function --------------------------------------------------------------------------
@pytest.mark.parametrize("text", strings.ALL)
def test_visible_spells_out_every_control_character(text: str) -> None:
    shown = visible(text)
    assert shown.isprintable() or all(c.isprintable() or c == "\u00a0" for c in shown)
    assert not strings.contains_control(shown) and "\n" not in shown
    assert visible(shown) == shown  # printable text is left as it is


def test_visible_keeps_printable_text_and_the_tools_own_lines() -> None:
    assert visible("Ryzen AI Max+ 395 · µs · 日本") == "Ryzen AI Max+ 395 · µs · 日本"
    assert visible("e\x1b]52;c;QQ\x07") == "e\\x1b]52;c;QQ\\x07"
    assert visible("c1\x9b2J\u2028\u0085\x00") == "c1\\x9b2J\\u2028\\x85\\x00"
    assert visible("a\nb\tc") == "a\\nb\\tc"
    assert terminal_text("a\nb\tc\x1b[2J") == "a\nb\tc\\x1b[2J"


def test_a_large_string_is_escaped_whole() -> None:
    big = strings.large()
    shown = visible(big)
    assert not strings.contains_control(shown)
    assert shown.count("\\x1b[2J") == big.count("\x1b")


def test_only_the_tools_own_colours_reach_the_stream() -> None:
    out = io.StringIO()
    stream = VisibleStream(out)
    stream.write(paint("FAIL", "31") + " node \x1b[32mfake\x1b[0m\n")
    assert out.getvalue() == "\x1b[31mFAIL\x1b[0m node \\x1b[32mfake\\x1b[0m\n"


# -- typed at the parser --------------------------------------------------------------------------
def _ip_addr(name: str, *addresses: tuple[str, str]) -> str:
    return json.dumps([{"ifname": name, "mtu": 1500, "operstate": "UP", "addr_info": [
        {"family": family, "local": local, "prefixlen": 64 if family == "inet6" else 24,
         "scope": "global"} for family, local in addresses]}])


@pytest.mark.parametrize("address", strings.IPV6_SCOPES)
def test_an_address_with_a_hostile_scope_is_dropped_with_a_note(address: str) -> None:
    for family in ("inet", "inet6"):
        (link,) = parse_ip_addr_json(_ip_addr("fab0", (family, address))).values()
        assert link.addresses == () and len(link.notes) == 1 and "dropped" in link.notes[0]
    assert address_problem(address) is not None


def test_inet_is_ipv4_and_inet6_ipv6() -> None:
    (link,) = parse_ip_addr_json(_ip_addr(
        "fab0", ("inet", "10.99.8.1"), ("inet", "fe80::1"), ("inet6", "10.99.8.2"),
        *[("inet6", a) for a in strings.GOOD_IPV6_SCOPES])).values()
    assert [a.address for a in link.addresses] == ["10.99.8.1", *strings.GOOD_IPV6_SCOPES]
    assert len(link.notes) == 2


def test_interface_names_are_what_linux_allows() -> None:
    """`dev_valid_name`: ESC and BEL are allowed (shown escaped), `/`, `:` and white space not."""
    assert ifname_problem("e\x1b]0;PWND\x07") is None
    for bad in ("a:b", "a b", "x\n  - name: ghost", "a/b", ".", "", "x" * 16):
        assert ifname_problem(bad) is not None
        assert parse_ip_addr_json(_ip_addr(bad, ("inet", "10.0.0.1"))) == {}


# -- init -------------------------------------------------------------------------------------
def test_init_quotes_every_value_it_did_not_type(tmp_path: Path) -> None:
    from strixwizard.cli.init import Found, write_site_file

    nodes = [NodeSpec(name=f"n{i}", host=f"10.99.9.{i + 1}", user=value, key=value)
             for i, value in enumerate(strings.YAML) if "\x00" not in value]
    found = {n.name: Found(f"fe80::{i + 1}%eth0", "fab0\nallow_soft_rdma: true")
             for i, n in enumerate(nodes)}
    out = write_site_file(tmp_path / "site.yaml", "s", nodes, found)
    site = load_site(out)
    assert [(n.name, n.user, n.key) for n in site.nodes] == [(n.name, n.user, n.key) for n in nodes]
    assert [n.fabric_address for n in site.nodes] == [f"fe80::{i + 1}%eth0" for i in range(len(nodes))]
    assert not site.allow_soft_rdma


def test_init_drops_an_address_whose_scope_injects_a_node(tmp_path: Path) -> None:
    from strixwizard.cli.init import Found, write_site_file

    nodes = [NodeSpec(name="a", host="10.99.9.1"), NodeSpec(name="b", host="10.99.9.2")]
    found = {"a": Found(strings.IPV6_SCOPES[0], "fab0"), "b": Found("10.99.8.2", "fab0")}
    site = load_site(write_site_file(tmp_path / "site.yaml", "s", nodes, found))
    assert [n.name for n in site.nodes] == ["a", "b"]
    assert [n.fabric_address for n in site.nodes] == [None, "10.99.8.2"]
    assert "not an IP address" in (tmp_path / "site.yaml").read_text()


def test_init_refuses_to_save_a_file_that_reads_back_otherwise(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """Were a value ever written unquoted, the read-back catches the node it injects."""
    from strixwizard.cli import init
    from strixwizard.errors import UsageError

    monkeypatch.setattr(init, "_quoted", str)  # a quoting bug, on purpose
    nodes = [NodeSpec(name="a", host="10.99.9.1", user="root\n  - name: ghost\n    host: 10.99.10.99")]
    with pytest.raises(UsageError, match="not saved: the site file would read back differently"):
        init.write_site_file(tmp_path / "site.yaml", "s", nodes, None)
    assert not (tmp_path / "site.yaml").exists()


# -- the plain CLI on a hostile bundle ----------------------------------------------------------
def _no_control(text: str) -> None:
    assert not strings.contains_control(text), [line for line in text.splitlines()
                                                if strings.contains_control(line)][:3]


def test_doctor_text_spells_out_what_a_hostile_bundle_says(tmp_path: Path) -> None:
    paths = hostile_bundle(tmp_path, KERNEL, FIRMWARE)
    for verbose in ((), ("--verbose",)):
        result = run_cli("doctor", *verbose, "--snapshot", *map(str, paths))
        assert result.rc == 1, result.stderr
        _no_control(result.stdout + result.stderr)
        assert "kernel 6.1.0[/]\\x1b[2J" in result.stdout.splitlines()[1]
    assert "\\x1b]52;c;cHduZWQ=\\x07" in result.stdout  # --verbose shows the firmware
    exact = run_cli("doctor", "--json", "--snapshot", *map(str, paths)).json()
    assert [h["facts"]["kernel"] for h in exact["hosts"]] == [KERNEL, KERNEL]  # JSON: exact


@pytest.mark.parametrize("site_name", ["x\n\x1b]0;PWNED\x07[/]", "[/]", "a b", "../etc"])
def test_a_bundles_site_name_follows_the_site_file_rules(tmp_path: Path, site_name: str) -> None:
    paths = hostile_bundle(tmp_path, "6.18.5", "4.91", site_name=site_name)
    result = run_cli("doctor", "--snapshot", *map(str, paths))
    assert result.rc == 2 and "which is not a site name" in result.stderr, result.stderr
    _no_control(result.stdout + result.stderr)


@pytest.mark.parametrize(("field", "value"), [("host", "10.99.250.1\n  - name: ghost"),
                                              ("host", "x\x1b]0;PWNED\x07"),
                                              ("fabric_address", strings.IPV6_SCOPES[0]),
                                              ("fabric_address", "not-an-address")])
def test_a_bundles_node_addresses_follow_the_site_file_rules(tmp_path: Path, field: str,
                                                             value: str) -> None:
    paths = hostile_bundle(tmp_path, "6.18.5", "4.91", nodes={"node-b": {field: value}})
    result = run_cli("doctor", "--snapshot", *map(str, paths))
    assert result.rc == 2 and f"meta.json's node 'node-b': {field}" in result.stderr, result.stderr
    _no_control(result.stdout + result.stderr)


def test_deploy_persist_refuses_a_gguf_path_with_a_line_break(tmp_path: Path) -> None:
    for path in ("/models/x.gguf\nExecStartPre=/bin/sh -c id", "/models/x\x1b]0;t\x07.gguf"):
        result = run_cli("deploy", "--demo", "--stack", "llama-rpc", "--persist", "--gguf", path,
                         "--plan", env={"XDG_STATE_HOME": str(tmp_path / "state")})
        assert result.rc == 2 and "--gguf" in result.stderr and "control character" in result.stderr
        _no_control(result.stdout + result.stderr)


def test_prometheus_and_html_keep_their_escaping(tmp_path: Path) -> None:
    """The textfile and the HTML report held before issue 22 (markup escaped); the HTML and
    Markdown reports now spell control characters out too, as the terminal does."""
    from prometheus_client.parser import text_string_to_metric_families

    from strixwizard.services.discover import discover
    from strixwizard.services.nodes import RunRequest
    from strixwizard.tui.export import to_html

    paths = hostile_bundle(tmp_path / "bundle", KERNEL, FIRMWARE)
    prom = tmp_path / "doctor.prom"
    result = run_cli("doctor", "--snapshot", *map(str, paths), "--prometheus", str(prom))
    assert result.rc == 1, result.stderr
    text = prom.read_text()
    assert not strings.contains_control(text)
    labels = [v for family in text_string_to_metric_families(text) for sample in family.samples
              for v in sample.labels.values()]
    assert labels  # it parses, every label value whole
    report = discover(RunRequest(snapshots=tuple(paths)), None, plan=False).report
    html = to_html(report)
    assert "[@click=app.screenshot(&#x27;owned.conf&#x27;" in html and "\\x1b]52;c;" in html
    assert not strings.contains_control(html)


def test_deploy_plan_on_a_hostile_bundle_spells_it_out(tmp_path: Path) -> None:
    paths = hostile_bundle(tmp_path / "bundle", KERNEL, FIRMWARE)
    site = tmp_path / "site.yaml"
    site.write_text("site: hostile\nnodes:\n" + "".join(
        f"  - name: {p.name}\n    snapshot: {p}\n    fabric_address: 192.168.100.{i + 1}\n"
        for i, p in enumerate(paths)))
    result = run_cli("deploy", "--site", str(site), "--plan",
                     env={"XDG_STATE_HOME": str(tmp_path / "state")})
    assert result.rc in (0, 2), result.stdout + result.stderr
    _no_control(result.stdout + result.stderr)


@pytest.mark.parametrize("host", ["x\n\x1b]0;PWNED\x07[/]", "../../etc", "a b"])
def test_a_plain_snapshots_host_is_a_node_name_only_when_it_is_one(tmp_path: Path, host: str) -> None:
    from tests.support.hostile.bundles import hostile_snapshot

    path = hostile_snapshot("node-a", tmp_path, "6.18.5", "4.91", host=host)
    document = run_cli("doctor", "--json", "--snapshot", str(path)).json()
    assert [h["name"] for h in document["hosts"]] == ["node-a"]  # the snapshot's file name
