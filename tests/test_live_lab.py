"""Live tests on the lab: real namespaces, real sshd, real veth links, paramiko.

The lab has no RDMA: TCP is measured for real between namespaces over the
fabric veth (fab0); perftest and mpirun are stand-in executables (installed
with `LabHost.stand_in`) that print recorded real-format outputs from
tests/data/live/ — they are labelled as stand-ins below. A fabric interface named with shell
metacharacters is measured over and runs nothing; a counter reset during a test warns, and a
signal during a test ends it after the result in flight with no program left on a node.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from strixwizard.live.perftest import PerftestSettings, rdma_test
from strixwizard.live.plan import RdmaEnd
from strixwizard.model import Status
from strixwizard.node import NodeSession, connect, target_for
from strixwizard.site import Thresholds, load_site
from tests.support.cli import run_cli
from tests.support.lab import (
    Lab,
    LabHost,
    lab_fixture,
    require_lab_tools,
    reset_hosts,
    sweep_stale_labs,
)
from tests.support.netdevs import rename

DATA = Path(__file__).parent / "data" / "live"
lab4 = lab_fixture(4)

SERVER_STAND_IN = """#!/bin/sh
# stand-in for perftest's server side: real banner, then waits as the real one does
echo "$@" > "$HOME/{tool}.server.argv"
echo $$ > "$HOME/{tool}.server.pid"
case " $* " in *" -p 18515 "*) if [ -e "$HOME/port_busy" ]; then
  echo " Couldn't listen to port 18515" >&2; exit 1; fi;; esac
echo '************************************'
echo '* Waiting for client to connect... *'
echo '************************************'
exec sleep 60
"""

CLIENT_STAND_IN = """#!/bin/sh
# stand-in for perftest's client side: prints a recorded output ({recording})
echo "$@" > "$HOME/{tool}.client.argv"
echo $$ > "$HOME/{tool}.client.pid"
cat "$HOME/{recording}"
{tail}
"""


def _wait_dead(host: LabHost, pid: int, seconds: float = 8) -> bool:
    """``pid`` (as the node reports it: its own PID namespace) has ended on ``host``."""
    deadline = time.monotonic() + seconds
    while host.pid_alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not host.pid_alive(pid)


def _hosts(lab: Lab, tmp: Path) -> tuple[NodeSession, NodeSession]:
    site = load_site(lab.write_site_yaml(tmp / "lab.yaml"))
    return (connect(target_for(site, site.nodes[0])), connect(target_for(site, site.nodes[1])))


def _ends(lab: Lab) -> tuple[RdmaEnd, RdmaEnd]:
    a, b = lab.hosts[0], lab.hosts[1]
    return (RdmaEnd(a.name, "rocep194s0", 1, 1, 4096, a.fabric_addr, "fab0", 100.0, "Ethernet"),
            RdmaEnd(b.name, "rocep194s0", 1, 1, 4096, b.fabric_addr, "fab0", 100.0, "Ethernet"))


def _install_perftest(lab: Lab, tool: str, recording: str, tail: str = "exit 0") -> None:
    client, server = lab.hosts[0], lab.hosts[1]
    (client.home / recording).write_text((DATA / recording).read_text())
    client.stand_in(tool, CLIENT_STAND_IN.format(tool=tool, recording=recording, tail=tail))
    server.stand_in(tool, SERVER_STAND_IN.format(tool=tool))


@pytest.fixture
def lab2(tmp_path_factory: pytest.TempPathFactory):
    """A fresh 2-host lab per test, for tests that break or reconfigure hosts."""
    require_lab_tools()
    sweep_stale_labs()
    with Lab(tmp_path_factory.mktemp("lab"), 2) as lab:
        yield lab


# -- TCP for real between namespaces ------------------------------------------------
def test_latency_pair_measures_tcp_over_the_fabric_veth(lab4: Lab, tmp_path: Path) -> None:
    site = lab4.write_site_yaml(tmp_path / "lab.yaml")
    history = tmp_path / "history.sqlite"
    args = ("test", "latency", "--site", str(site), "--pair", "node0,node1", "--json", "--seconds", "2",
            "--history", str(history))
    # lab SSH sessions have no /usr/sbin on PATH (as non-root users on Debian): the real ethtool
    # there, for the fabric counters read before and after the run
    sbin = [h.stand_in("ethtool", '#!/bin/sh\nexec /usr/sbin/ethtool "$@"\n') for h in lab4.hosts[:2]]
    try:
        result = run_cli(*args, timeout=120)
    finally:
        for path in sbin:
            path.unlink()
    doc = result.json()
    by_tool = {r["tool"]: r for r in doc["results"]}
    tcp = by_tool["strixwizard tcp ping-pong"]
    assert tcp["status"] == "pass", tcp
    assert tcp["source"] == "measured"
    assert f"{lab4.hosts[1].fabric_addr}" in tcp["path"] and "fab0" in tcp["path"]
    assert 0 < tcp["latency_us"]["median"] < 150 and tcp["latency_us"]["samples"] > 100
    assert by_tool["sockperf ping-pong"]["role"] == "reference"
    assert by_tool["sockperf ping-pong"]["latency_us"]["median"] > 0
    assert by_tool["qperf tcp_lat"]["latency_us"]["avg"] > 0
    rdma = by_tool["ib_write_lat"]
    assert rdma["status"] == "skip" and "ethernet: no hardware RDMA" in rdma["summary"]
    # RDMA was asked for and never measured: no verdict, whatever TCP gave
    assert (result.rc, doc["status"]) == (2, "error")
    # the fabric veths' counters, read before and after the run through the collector
    counters = doc["counters"]
    assert {(c["host"], c["device"]) for c in counters} == {("node0", "fab0"), ("node1", "fab0")}, [
        r for r in doc["results"] if r["kind"] == "counters"]
    # the veth's netdev statistics in sysfs are its health counters (its `ethtool -S` has none)
    assert {c["counter"] for c in counters} >= {"rx_crc_errors", "rx_frame_errors", "tx_errors",
                                                "rx_dropped"}
    assert all(c["delta"] == c["after"] - c["before"] for c in counters)
    assert all(c["delta"] == 0 for c in counters if c["kind"] in ("corrupt", "discard"))
    assert by_tool["ethtool -S, hw_counters"]["role"] == "reference"
    assert doc["history"]["path"] == str(history) and doc["history"]["run_id"] == 1
    again = run_cli(*args, timeout=120).json()
    compared = {c["tool"]: c for c in again["history"]["compared"]}
    assert compared["strixwizard tcp ping-pong"]["last_good_figure"] == tcp["figure"]


def test_matrix_runs_every_pair_once_in_rounds(lab4: Lab, tmp_path: Path) -> None:
    site = lab4.write_site_yaml(tmp_path / "lab.yaml")
    result = run_cli("test", "matrix", "--site", str(site), "--json", "--seconds", "0.5",
                     "--no-references", "--no-history", "--transport", "tcp", timeout=180)
    doc = result.json()
    matrix = doc["matrix"]
    assert len(matrix["rounds"]) == 3 and all(len(r) == 2 for r in matrix["rounds"])
    tcp = [r for r in doc["results"] if r["tool"] == "strixwizard tcp ping-pong"]
    assert sorted(tuple(sorted(r["pair"])) for r in tcp) == [
        ("node0", "node1"), ("node0", "node2"), ("node0", "node3"),
        ("node1", "node2"), ("node1", "node3"), ("node2", "node3")]
    assert all(r["status"] == "pass" for r in tcp), [r["summary"] for r in tcp]
    cross = next(r for r in tcp if sorted(r["pair"]) == ["node0", "node2"])
    assert "management network" in cross["path"]  # no fabric veth between node0 and node2
    assert matrix["tcp_latency_us"]["node0"]["node1"] == matrix["tcp_latency_us"]["node1"]["node0"]
    # TCP asked for alone: judged on it (beside it only the fabric counters, a reference)
    assert {r["transport"] for r in doc["results"] if r["role"] == "verdict"} == {"tcp"}
    assert {r["transport"] for r in doc["results"] if r["role"] != "verdict"} <= {"tcp", "fabric"}
    assert result.rc == 0


# -- perftest orchestration with stand-ins (recorded real-format outputs) -------------------
def test_perftest_pair_parses_the_client_table_and_stops_the_server(lab2: Lab, tmp_path: Path) -> None:
    _install_perftest(lab2, "ib_write_lat", "ib_write_lat_e810_cpufreq_warning.txt")
    client, server = _hosts(lab2, tmp_path)
    m = rdma_test("ib_write_lat", client, server, _ends(lab2), Thresholds())
    assert m.status is Status.PASS, m.summary
    assert m.latency is not None and m.latency.median_us == 5.19 and m.latency.p999_us == 11.62
    client_argv = (lab2.hosts[0].home / "ib_write_lat.client.argv").read_text().split()
    assert client_argv == ["-d", "rocep194s0", "-i", "1", "-s", "64", "-n", "1000", "-p", "18515", "-F",
                           "-x", "1", "-m", "4096", str(lab2.hosts[1].fabric_addr)]
    server_pid = int((lab2.hosts[1].home / "ib_write_lat.server.pid").read_text())
    assert _wait_dead(lab2.hosts[1], server_pid), "the perftest server was left running"


def test_perftest_port_in_use_moves_to_the_next_port(lab2: Lab, tmp_path: Path) -> None:
    _install_perftest(lab2, "ib_write_lat", "ib_write_lat_rxe.txt")
    (lab2.hosts[1].home / "port_busy").write_text("")
    client, server = _hosts(lab2, tmp_path)
    m = rdma_test("ib_write_lat", client, server, _ends(lab2), Thresholds())
    assert m.status is Status.PASS, m.summary
    assert m.detail["notes"] == ["TCP port 18515 on node1 was in use"]
    assert "-p 18516" in " ".join(m.detail["client_argv"])  # type: ignore[arg-type]


def test_perftest_output_cut_short_is_an_error(lab2: Lab, tmp_path: Path) -> None:
    _install_perftest(lab2, "ib_write_lat", "ib_write_lat_cut_short.txt", tail="exit 1")
    client, server = _hosts(lab2, tmp_path)
    m = rdma_test("ib_write_lat", client, server, _ends(lab2), Thresholds())
    assert m.status is Status.ERROR
    assert "output cut short: cut in the row '4       1000          4.92           8.41'" in m.summary


def test_bandwidth_against_the_link_rate(lab2: Lab, tmp_path: Path) -> None:
    _install_perftest(lab2, "ib_write_bw", "ib_write_bw_e810_gbits.txt")
    client, server = _hosts(lab2, tmp_path)
    m = rdma_test("ib_write_bw", client, server, _ends(lab2), Thresholds(), link_rate_gbps=100.0)
    assert m.status is Status.FAIL and "51% of the 100 Gb/s link rate" in m.summary
    m = rdma_test("ib_write_bw", client, server, _ends(lab2), Thresholds(), link_rate_gbps=50.0)
    assert m.status is Status.PASS


def test_peer_dies_mid_test_is_reported_and_the_client_is_stopped(lab2: Lab, tmp_path: Path) -> None:
    _install_perftest(lab2, "ib_write_lat", "ib_write_lat_cut_short.txt", tail="exec sleep 60")
    client, server = _hosts(lab2, tmp_path)
    pid_file = lab2.hosts[0].home / "ib_write_lat.client.pid"

    def kill_server_node() -> None:
        deadline = time.monotonic() + 20
        while not pid_file.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.3)
        lab2.hosts[1].kill_all()

    killer = threading.Thread(target=kill_server_node)
    killer.start()
    started = time.monotonic()
    m = rdma_test("ib_write_lat", client, server, _ends(lab2), Thresholds(),
                  PerftestSettings(run_timeout=40))
    killer.join(30)
    assert time.monotonic() - started < 20
    assert m.status is Status.ERROR
    assert "node1: connection lost while ib_write_lat server ran" in m.summary
    assert _wait_dead(lab2.hosts[0], int(pid_file.read_text())), "the client on node0 was left running"


def test_real_perftest_on_a_node_without_rdma_says_why(lab2: Lab, tmp_path: Path) -> None:
    """The real ib_send_lat (no stand-in): the lab, like this machine, has no RDMA device."""
    client, server = _hosts(lab2, tmp_path)
    m = rdma_test("ib_send_lat", client, server, _ends(lab2), Thresholds())
    assert m.status is Status.ERROR
    assert m.summary == "node1: ib_send_lat server failed: Unable to find the Infiniband/RoCE device"


# -- RCCL with a stand-in mpirun printing a recorded log -------------------------------------
@pytest.mark.parametrize(("recording", "rc", "status", "words"), [
    ("all_reduce_perf_gfx1151_net_socket.txt", 1, "fail", "NET/Socket"),
    ("all_reduce_perf_gfx1151_net_ib.txt", 0, "pass", "NET/IB on rocep194s0:1"),
    ("all_reduce_perf_cut_short.txt", 2, "error", "cut short"),
])
def test_rccl_verdict_from_the_log(lab4: Lab, tmp_path: Path, recording: str, rc: int, status: str,
                                   words: str) -> None:
    head = lab4.hosts[0]
    (head.home / recording).write_text((DATA / recording).read_text())
    head.stand_in("mpirun", f"#!/bin/sh\n# stand-in for mpirun + all_reduce_perf: recorded output\n"
                            f"echo \"$@\" > \"$HOME/mpirun.argv\"\ncat \"$HOME/{recording}\"\n")
    site = lab4.write_site_yaml(tmp_path / "lab.yaml", hosts=lab4.hosts[:2])
    result = run_cli("test", "rccl", "--site", str(site), "--json", "--no-history", timeout=120)
    (r,) = [r for r in result.json()["results"] if r["kind"] == "rccl"]
    assert (result.rc, r["status"]) == (rc, status), r["summary"]
    assert words in r["summary"]
    argv = (head.home / "mpirun.argv").read_text()
    assert "-x NCCL_DEBUG=INFO" in argv
    assert f"-H {lab4.hosts[0].mgmt_addr}:1,{lab4.hosts[1].mgmt_addr}:1" in argv


def test_rccl_reads_the_j_document_where_the_binary_offers_it(lab4: Lab, tmp_path: Path) -> None:
    """Stand-ins: an all_reduce_perf whose `--help` lists -J (rccl-tests' usage line), and an
    mpirun that writes the -J document where it is asked (as rank 0 does, on the head) and
    prints the log. The figures come from the document, the transport from the log, and the
    document is removed from the head afterwards."""
    head = lab4.hosts[0]
    (head.home / "log.txt").write_text((DATA / "all_reduce_perf_gfx1151_net_ib.txt").read_text())
    (head.home / "report.json").write_text((DATA / "all_reduce_perf_gfx1151_J_report.json").read_text())
    head.stand_in("all_reduce_perf", "#!/bin/sh\n# stand-in: rccl-tests' usage text (src/common.cu)\n"
                  "echo 'USAGE: all_reduce_perf'\n"
                  "printf '\\t[-J,--output_file <file> write output to filepath, if accessible. "
                  "Infer type from suffix (only json supported presently.)] \\n'\n")
    head.stand_in("mpirun", "#!/bin/sh\n# stand-in for mpirun + all_reduce_perf -J FILE\n"
                            "echo \"$@\" > \"$HOME/mpirun.argv\"\nout=\n"
                            "while [ $# -gt 0 ]; do [ \"$1\" = -J ] && { shift; out=$1; }; shift; done\n"
                            "echo \"# Writing JSON output to $out\"\ncat \"$HOME/report.json\" > \"$out\"\n"
                            "echo \"$out\" > \"$HOME/report.path\"\ncat \"$HOME/log.txt\" | grep -v '^ '\n")
    site = lab4.write_site_yaml(tmp_path / "lab.yaml", hosts=lab4.hosts[:2])
    result = run_cli("test", "rccl", "--site", str(site), "--json", "--no-history", timeout=120)
    (r,) = [r for r in result.json()["results"] if r["kind"] == "rccl"]
    assert (result.rc, r["status"]) == (0, "pass"), r["summary"]
    assert "NET/IB on rocep194s0:1" in r["summary"] and "average busbw 2.55 GB/s" in r["summary"]
    assert r["detail"]["figures_from"] == "all_reduce_perf -J" and r["detail"]["rows"] == 7
    written = (head.home / "report.path").read_text().strip()
    assert f" all_reduce_perf -J {written} -b " in (head.home / "mpirun.argv").read_text()
    assert written.startswith("/tmp/strixwizard-all_reduce_perf-") and not Path(written).exists()


def test_a_cancel_stops_programs_on_every_node_at_once(lab4: Lab, tmp_path: Path) -> None:
    """The wizard's Stop: one Cancel ends what runs on all nodes and refuses what comes after."""
    from strixwizard.node import Cancel, Cancelled

    sleeper = ("#!/bin/sh\n# stand-in: a test program that runs until stopped\n"
               "echo $$ > \"$HOME/sleeper.pid\"\nexec sleep 60\n")
    for host in lab4.hosts[:2]:
        host.stand_in("strixwizard-sleeper", sleeper)
        (host.home / "sleeper.pid").unlink(missing_ok=True)
    cancel = Cancel()
    hosts = [cancel.scope(h) for h in _hosts(lab4, tmp_path)]
    try:
        processes = [h.start(["strixwizard-sleeper"], 60) for h in hosts]
        pid_files = [h.home / "sleeper.pid" for h in lab4.hosts[:2]]
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            if all(p.exists() and p.read_text().strip() for p in pid_files):
                break
            time.sleep(0.05)
        pids = [int(p.read_text()) for p in pid_files]
        started = time.monotonic()
        cancel.cancel()
        assert time.monotonic() - started < 10
        assert all(p.ended and p.status == 125 for p in processes), [p.status for p in processes]
        assert all(_wait_dead(host, pid) for host, pid in zip(lab4.hosts, pids, strict=False)), (
            "a program outlived the cancel")
        with pytest.raises(Cancelled):
            hosts[0].start(["strixwizard-sleeper"], 60)
    finally:
        for host in hosts:
            host.close()


#: A STAND-IN for a perftest that offers --out_json (perftest >= 4.5-0.2): its usage line for
#: --help; otherwise the recorded table on stdout and a report, in perftest's JSON layout, in
#: the --out_json_file it was given (BW_average with more digits than the table, to tell them
#: apart).
JSON_CLIENT_STAND_IN = """#!/bin/sh
case "$1" in --help) echo '      --out_json  Save the report in a json file'; exit 0;; esac
echo "$@" > "$HOME/{tool}.client.argv"
for arg in "$@"; do case "$arg" in --out_json_file=*) out="${{arg#--out_json_file=}}";; esac; done
cat "$HOME/{recording}"
[ -n "$out" ] && printf '%s\\n' '{{' '"test_info": {{' '"test": "RDMA_Write_BW_Test",' \\
  '"Device": "rocep194s0"' '}},' '"results": {{' '"MsgSize": 65536,' '"n_iterations": 5000,' \\
  '"BW_peak": 50.71,' '"BW_average": 50.6437,' '"MsgRate": 0.096585' '}}' '}}' > "$out"
exit 0
"""


def test_bandwidth_is_read_from_out_json_where_perftest_offers_it(lab2: Lab, tmp_path: Path) -> None:
    tool, recording = "ib_write_bw", "ib_write_bw_e810_gbits.txt"
    client, server = lab2.hosts[0], lab2.hosts[1]
    (client.home / recording).write_text((DATA / recording).read_text())
    client.stand_in(tool, JSON_CLIENT_STAND_IN.format(tool=tool, recording=recording))
    server.stand_in(tool, SERVER_STAND_IN.format(tool=tool))
    a, b = _hosts(lab2, tmp_path)
    m = rdma_test(tool, a, b, _ends(lab2), Thresholds(), link_rate_gbps=100.0)
    assert m.bandwidth_gbps == 50.6437, m.summary  # the JSON's figure, not the table's 50.64
    assert "figures read from ib_write_bw --out_json" in (m.detail or {}).get("notes", [])
    argv = (client.home / f"{tool}.client.argv").read_text().split()
    assert "--out_json" in argv and argv[-1] == lab2.hosts[1].fabric_addr  # the address stays last
    # the report was removed from the node
    report = next(arg for arg in argv if arg.startswith("--out_json_file=")).split("=", 1)[1]
    probe = a.start(["test", "-e", report], 10, "is the report gone")
    assert probe.wait(10) and probe.status == 1


# -- a fabric interface named with shell metacharacters ---------------------------------------

#: The name of the fabric interface on the nodes of `hostile_lab` (Linux takes it).
HOSTILE = "f;id>PWNED0"
hostilelab = lab_fixture(2, name="hostilelab")


@pytest.fixture
def hostile_lab(hostilelab: Lab) -> Iterator[Lab]:
    """A lab of its own whose fabric interface is named HOSTILE."""
    for host in hostilelab.hosts:
        rename(host, "fab0", HOSTILE)
    yield hostilelab
    for host in hostilelab.hosts:
        rename(host, HOSTILE, "fab0")


def test_latency_with_a_hostile_interface_name_runs_nothing(hostile_lab: Lab, tmp_path: Path) -> None:
    """`test latency` between the two nodes: the TCP ping-pong goes over the renamed fabric
    interface, the references run or say why not, and no name reaches a shell."""
    site = hostile_lab.write_site_yaml(tmp_path / "lab.yaml")
    env = {"XDG_STATE_HOME": str(tmp_path / "state")}
    result = run_cli("test", "latency", "--site", str(site), "--pair", "node0,node1", "--json",
                     "--seconds", "1", "--no-history", env=env, timeout=180)
    for host in hostile_lab.hosts:
        assert not list(host.home.rglob("PWNED*")), "a node ran a command from the name"
    assert not list(Path.cwd().glob("PWNED*")) and not list(tmp_path.rglob("PWNED*"))
    # the lab has no RDMA: a run asked for RDMA that measured none has no verdict (exit 2)
    assert result.rc == 2 and result.json()["status"] == "error", result.stdout + result.stderr
    by_tool = {r["tool"]: r for r in result.json()["results"]}
    tcp = by_tool["strixwizard tcp ping-pong"]
    assert tcp["status"] == "pass" and tcp["source"] == "measured", tcp
    assert HOSTILE in tcp["path"] and hostile_lab.hosts[1].fabric_addr in tcp["path"]
    assert tcp["latency_us"]["samples"] > 0
    for tool in ("sockperf ping-pong", "qperf tcp_lat"):  # references: measured on the same path
        reference = by_tool[tool]
        assert reference["role"] == "reference" and HOSTILE in reference["path"], reference
        assert max(v for v in reference["latency_us"].values() if isinstance(v, (int, float))) > 0
    rdma = by_tool["ib_write_lat"]
    assert rdma["status"] == "skip" and f"node0:{HOSTILE} <-> node1:{HOSTILE}" in rdma["summary"]


# -- a counter reset and a signal during a test ----------------------------------------------

#: A lab of its own for the tests that put stand-ins on a node: each starts and ends with no
#: stand-in, no marker and the fabric MTU at 1500.
stoplab2 = lab_fixture(2, name="stoplab2")




@pytest.fixture
def lab(stoplab2: Lab) -> Iterator[Lab]:
    reset_hosts(stoplab2)
    yield stoplab2
    reset_hosts(stoplab2)


SIGNALS = {"SIGINT": (signal.SIGINT, 130), "SIGTERM": (signal.SIGTERM, 143),
           "SIGHUP": (signal.SIGHUP, 129)}


def test_a_counter_reset_during_a_test_warns_and_huge_values_are_dropped(
        lab: Lab, tmp_path: Path) -> None:
    """node0's `ethtool -S fab0` (a stand-in: veth has no such counters) says rx_discards_phy
    1000 before the test and 7 after it, as after a NIC reset, and prints one 400-digit value.
    It is called by discovery (twice), then before and after the test."""
    site = lab.write_site_yaml(tmp_path / "lab.yaml")
    lab.hosts[0].stand_in("ethtool", '#!/bin/sh\n'
                          '[ "$1" = -S ] || exec /usr/sbin/ethtool "$@"\n'
                          'n=$(($(cat /root/fault-ethtool 2>/dev/null || echo 0) + 1))\n'
                          'echo $n > /root/fault-ethtool\n'
                          'if [ $n -le 3 ]; then v=1000; else v=7; fi\n'
                          'echo "NIC statistics:"\necho "     rx_discards_phy: $v"\n'
                          f'echo "     tx_errors: {"9" * 400}"\n')
    prom = tmp_path / "test.prom"
    try:
        result = run_cli("test", "latency", "--site", str(site), "--pair", "node0,node1",
                         "--json", "--seconds", "0.5", "--no-references", "--no-history",
                         "--transport", "tcp", "--prometheus", str(prom), timeout=180)
    finally:
        calls = (lab.hosts[0].home / "fault-ethtool").read_text().strip()
        for marker in lab.hosts[0].home.glob("fault-*"):
            marker.unlink()
    doc = result.json()
    assert calls == "4", calls  # discovery (twice), before, after: the last one is 7
    (counters,) = [r for r in doc["results"] if r["kind"] == "counters"]
    assert counters["status"] == "warn", counters
    (row,) = [c for c in doc["counters"] if c["host"] == "node0" and c["counter"] == "rx_discards_phy"]
    assert (row["before"], row["after"], row["reset"]) == (1000, 7, True)
    assert ("node0:fab0 rx_discards_phy reset during the test: growth unknown (at least 7 since "
            "the reset)") in counters["summary"]
    assert doc["status"] == "warn" and "no retransmit or sequence error grew" not in str(doc)
    assert "fab0: dropped tx_errors: not an unsigned 64-bit value" in counters["detail"]["notes"]
    assert "Traceback" not in result.stderr and prom.is_file()
    assert "strixwizard_test_status" in prom.read_text()


@pytest.mark.parametrize("name", ["SIGINT", "SIGTERM"])
def test_a_signal_during_test_ends_after_the_result_in_flight_with_no_program_left(
        lab: Lab, tmp_path: Path, name: str) -> None:
    """`test latency` (TCP on the lab, references on: sockperf and qperf follow our ping-pong):
    the signal arrives while the first measurement runs; the run ends after it, as cancelled,
    with exit 128+N and no program of the test left on either node."""
    signum, status = SIGNALS[name]
    site = lab.write_site_yaml(tmp_path / "lab.yaml")
    proc = subprocess.Popen(
        [sys.executable, "-m", "strixwizard", "test", "latency", "--site", str(site), "--pair",
         "node0,node1", "--seconds", "2", "--no-history", "--transport", "tcp"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL)
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()  # the header: the run has begun
        assert first.startswith("strixwizard test latency on"), first
        time.sleep(1.0)  # inside the first measurement
        os.kill(proc.pid, signum)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate(timeout=30)
    assert proc.returncode == status, (proc.returncode, out, err)
    assert "Traceback" not in err, err
    assert f"no verdict (exit {status}): cancelled by {name} after " in out, out
    assert "verdict: pass" not in out
    time.sleep(1)
    for host in lab.hosts:
        left = [cmd for cmd in host.node_pids().values()  # only the node's init and sshd
                if "sshd" not in cmd and 'execvp("mount"' not in cmd]
        assert left == [], (host.name, left)
