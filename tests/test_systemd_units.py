"""One rule for every value strixwizard writes into a systemd unit (`strixwizard.units`): the
units of `init --timer`, `deploy --persist` and the fix engine, written from odd and hostile
values, pass `systemd-analyze verify` without a word, read back to exactly the planned argv,
and what a unit cannot carry is refused with exit 2 before anything is planned."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from fixes.steps import unit_text as fix_unit_text
from strixwizard.cli.timer import doctor_argv, timer_units
from strixwizard.deploy.stacks.llama_rpc.persist import unit_text as persist_unit_text
from strixwizard.units import (
    UnitValueError,
    command_line,
    environment,
    executable,
    label,
    path_value,
    word,
)
from tests.support.cli import invoke
from tests.support.systemd_units import (
    ODD_ARGS,
    command_argv,
    environment_pairs,
    settings,
    verify,
)

#: Linux interface names may hold any byte but `/`, `:`, white space and NUL
#: (`dev_valid_name`): a backslash, quotes, `%`, `$` among them.
ODD_NETDEVS = ["eth\\x2d0", "eth\\", "it's", 'q"q', "p$%q", "br.10"]


def test_each_odd_argument_reads_back_as_itself() -> None:
    argv = ["/usr/bin/true", *ODD_ARGS]
    assert command_argv(command_line(argv)) == argv


def test_the_test_reading_agrees_with_systemd_on_escapes(tmp_path: Path) -> None:
    """The reading in tests/support/systemd_units.py, checked against systemd itself: its
    message "Command PATH is not executable" shows how it read a program's path."""
    unit = tmp_path / "probe.service"
    for written in ("/nx/a\\x2db", "'/nx/q\\sr'", '"/nx/t\\x41u"', "/nx/100%%", "'/nx/%%'"):
        unit.write_text(f"[Service]\nType=oneshot\nExecStart={written}\n")
        said = verify(unit)
        assert said == f"probe.service: Command {command_argv(written)[0]} is not " \
                       "executable: No such file or directory", said
    # specifiers are expanded after the escapes: a `%` the writer left in would be one
    unit.write_text("[Service]\nType=oneshot\nExecStart=/nx/\\x25n\n")
    assert verify(unit) == "probe.service: Command /nx/probe.service is not executable: No such " \
                           "file or directory"
    with pytest.raises(AssertionError, match="specifier"):
        command_argv("/nx/\\x25n")


@pytest.mark.parametrize("value", ["/opt/llama\\x2dbin/srv", "/opt/it's/srv", '/opt/q"/srv',
                                   "/opt/a$b/srv", "opt/rel/srv", "./srv", "/opt/../srv",
                                   "/opt//srv", "/opt/srv/", "-srv", "/opt/x\n/srv", ""])
def test_a_program_path_systemd_would_read_otherwise_is_refused(value: str) -> None:
    with pytest.raises(UnitValueError):
        executable(value)


def test_program_paths_systemd_keeps_are_written(tmp_path: Path) -> None:
    """A space, `%` and UTF-8 in the program's folder: systemd finds exactly that program
    (it names any path it cannot find)."""
    folder = tmp_path / "llama 100% cpp é"
    folder.mkdir()
    program = folder / "ggml-rpc-server"
    program.write_text("#!/bin/sh\n")
    program.chmod(0o755)
    unit = tmp_path / "strixwizard-llama-rpc.service"
    unit.write_text(persist_unit_text("ggml-rpc-server", str(program), ODD_ARGS,
                                      ("GGML_RDMA_GID=3", "ODD=a b'c\\d%$"),
                                      str(tmp_path / "run 100%" / "rpc.log"),
                                      str(tmp_path / "run 100%")))
    assert verify(unit) == ""
    text = unit.read_text()
    assert command_argv(settings(text, "ExecStart")[0]) == [str(program), *ODD_ARGS]
    assert command_argv(settings(text, "ExecStartPre")[0]) == [
        "/bin/mkdir", "-p", "--", str(tmp_path / "run 100%")]
    assert environment_pairs(settings(text, "Environment")[0]) == ["GGML_RDMA_GID=3",
                                                                    "ODD=a b'c\\d%$"]
    assert settings(text, "StandardOutput") == [f"truncate:{tmp_path}/run 100%%/rpc.log"]


@pytest.mark.parametrize("netdev", ODD_NETDEVS)
def test_fix_units_carry_interface_names_as_they_are(tmp_path: Path, netdev: str) -> None:
    unit = tmp_path / "strixwizard-net-mtu-x.service"
    unit.write_text(fix_unit_text("net.mtu", f"MTU 9000 on {netdev}",
                                  [["ip", "link", "set", "dev", netdev, "mtu", "9000"]], netdev))
    assert verify(unit) == ""
    text = unit.read_text()
    assert [command_argv(v) for v in settings(text, "ExecStart")] == [
        ["ip", "link", "set", "dev", netdev, "mtu", "9000"]]
    # a description ending in a backslash does not swallow the next line
    assert settings(text, "BindsTo") and settings(text, "After")


def test_timer_units_carry_odd_site_paths(tmp_path: Path) -> None:
    folder = tmp_path / "site \\x2d 'a' \"b\" 100% $HOME ;"
    folder.mkdir()
    site, textfile = folder / "site.yaml", tmp_path / "prom\\s" / "strixwizard.prom"
    units = timer_units("lab\\", site, textfile, python=sys.executable)
    for name, text in units.files().items():
        (tmp_path / name).write_text(text)
    assert verify(*(tmp_path / name for name in units.files())) == ""
    assert command_argv(settings(units.service, "ExecStart")[0]) == doctor_argv(site, textfile)
    assert settings(units.service, "Description") == ["strixwizard doctor for site lab\\x5c"]


def test_values_a_unit_cannot_carry_are_refused() -> None:
    for bad in ("a\nExecStartPre=/bin/false", "tab\there", "c1\x9b", "\udcff"):
        with pytest.raises(UnitValueError):
            word(bad)
    for bad_path in ("run/rpc.log", "/run/../x.log", "/run/x.log\\", " /run/x.log", "/run/x/"):
        with pytest.raises(UnitValueError):
            path_value(bad_path)
    for pair in ("NOEQUALS", "1X=2", "A B=1"):
        with pytest.raises(UnitValueError):
            environment([pair])
    assert label("line\nbreak 100%") == "line\\x0abreak 100%%"


@pytest.mark.parametrize(("bin_dir", "why"), [
    ("/opt/llama\\x2dbin", "backslash"), ("/opt/it's", "quote"), ('/opt/"q"', "quote"),
    ("opt/llama", "absolute"), ("/opt/$HOME", "`$`"), ("/opt/../llama", "without `.`")])
def test_deploy_persist_refuses_a_bin_dir_systemd_would_read_otherwise(
        tmp_path: Path, bin_dir: str, why: str) -> None:
    """`/opt/llama\\x2dbin` was written into `ExecStart='…'`: systemd undoes `\\x2d` inside
    quotes and would have run /opt/llama-bin/ggml-rpc-server, another program than planned."""
    done = invoke("deploy", "--demo", "--stack", "llama-rpc", "--persist", "--gguf", "/m.gguf",
                  "--llama-bin-dir", bin_dir, "--plan",
                  env={"XDG_STATE_HOME": str(tmp_path / "state")})
    assert done.rc == 2, done.stdout
    assert "--llama-bin-dir" in done.stderr and why in done.stderr, done.stderr
    assert "Traceback" not in done.stderr and not (tmp_path / "state").exists()


def test_deploy_persist_refuses_a_relative_run_dir(tmp_path: Path) -> None:
    done = invoke("deploy", "--demo", "--stack", "llama-rpc", "--persist", "--gguf", "/m.gguf",
                  "--llama-run-dir", "run", "--plan", env={"XDG_STATE_HOME": str(tmp_path)})
    assert done.rc == 2 and "--llama-run-dir" in done.stderr and "absolute" in done.stderr


def test_a_fix_unit_for_a_name_no_unit_can_carry_is_runtime_only() -> None:
    """A node may name an interface with a control character (Linux refuses only `/`, `:`,
    white space and NUL): the fix says it is runtime only, with the reason, and writes no unit."""
    from types import SimpleNamespace

    from fixes.steps import unit_steps
    from strixwizard.facts.persistence import Persistence

    # a stand-in for NodeFacts: unit_steps reads only its persistence facts
    node = SimpleNamespace(persistence=Persistence("systemd", None, {}, None))
    netdev = "eth\x1b"
    steps, sentence = unit_steps(node, "net.mtu", netdev, f"MTU 9000 on {netdev}",  # type: ignore[arg-type]
                                 [["ip", "link", "set", "dev", netdev, "mtu", "9000"]], netdev)
    assert steps == [] and sentence.startswith("runtime only") and "eth\\x1b" in sentence
