"""Parsers of the live tests, on recorded outputs (tests/data/live/README.md says which are real)."""

from __future__ import annotations

from pathlib import Path

import pytest

from strixwizard.live.perftest_output import (
    PerftestParseError,
    bandwidth_gbps,
    latency_stats,
    parse_perftest,
)
from strixwizard.live.rccl import judge_rccl
from strixwizard.live.rccl_output import (
    RcclOutputError,
    json_files_written,
    parse_all_reduce,
    parse_collective_json,
    parse_transport,
    strip_launcher_prefix,
    supports_json_file,
)
from strixwizard.live.tcp_tools_output import ToolOutputError, parse_qperf_latency, parse_sockperf
from strixwizard.model import Status

DATA = Path(__file__).parent / "data" / "live"


def read(name: str) -> str:
    return (DATA / name).read_text()


def test_ib_write_lat_rxe_real_output_all_columns() -> None:
    table = parse_perftest(read("ib_write_lat_rxe.txt"))
    assert table.test == "RDMA_Write Latency Test"
    assert table.params["Device"] == "rxe0" and table.params["GID index"] == "1"
    assert [c.name for c in table.columns] == [
        "#bytes", "#iterations", "t_min", "t_max", "t_typical", "t_avg", "t_stdev",
        "99% percentile", "99.9% percentile"]
    assert table.complete and len(table.rows) == 1
    stats = latency_stats(table, table.rows[0])
    assert (stats.min_us, stats.median_us, stats.avg_us, stats.p99_us, stats.p999_us, stats.max_us) == (
        1.42, 1.47, 1.47, 1.57, 1.93, 1.93)
    assert stats.samples == 1000


def test_cpu_frequency_warning_inside_the_table_is_skipped() -> None:
    table = parse_perftest(read("ib_write_lat_e810_cpufreq_warning.txt"))
    assert table.complete
    assert any("Conflicting CPU frequency" in w for w in table.warnings)
    stats = latency_stats(table, table.rows[0])
    assert stats.median_us == 5.19 and stats.avg_us == 5.23
    assert table.params["Mtu"] == "4096[B]"


def test_older_latency_layout_has_no_average_or_percentiles() -> None:
    table = parse_perftest(read("ib_write_lat_old_layout.txt"))
    stats = latency_stats(table, table.rows[0])
    assert stats.median_us == 1.11 and stats.avg_us is None and stats.p99_us is None


def test_all_sizes_gives_one_row_per_size() -> None:
    table = parse_perftest(read("ib_write_lat_all_sizes.txt"))
    assert [int(r["#bytes"]) for r in table.rows] == [2, 4, 8, 16, 32, 64, 128]
    assert table.complete


def test_output_cut_short_is_never_a_figure() -> None:
    table = parse_perftest(read("ib_write_lat_cut_short.txt"))
    assert not table.complete
    assert table.truncated_row is not None and table.truncated_row.startswith("4 ")


def test_no_device_output_has_no_table() -> None:
    with pytest.raises(PerftestParseError, match=r"no result table.*Unable to find the Infiniband/RoCE"):
        parse_perftest(read("ib_write_lat_no_device.txt"))
    with pytest.raises(PerftestParseError, match="empty"):
        parse_perftest("")


@pytest.mark.parametrize(("name", "unit", "gbps"), [
    ("ib_write_bw_cx3_mib.txt", "MiB/sec", 3293.56 * 2**20 * 8 / 1e9),
    ("ib_write_bw_old_mb.txt", "MB/sec", 3290.77 * 2**20 * 8 / 1e9),
    ("ib_write_bw_e810_gbits.txt", "Gb/sec", 50.64),
])
def test_bandwidth_units_come_from_the_header(name: str, unit: str, gbps: float) -> None:
    table = parse_perftest(read(name))
    assert table.is_bandwidth and table.unit("BW average") == unit
    assert bandwidth_gbps(table, table.rows[-1]) == pytest.approx(gbps)


def test_mib_per_second_is_not_mistaken_for_gigabits() -> None:
    table = parse_perftest(read("ib_write_bw_cx3_mib.txt"))
    assert bandwidth_gbps(table, table.rows[0]) == pytest.approx(27.63, abs=0.01)  # not 3293


def test_sockperf_real_output_with_colours() -> None:
    stats = parse_sockperf(read("sockperf_pingpong_tcp_loopback.txt"))
    assert stats.avg_us == 10.907 and stats.median_us == 7.155 and stats.p99_us == 32.718
    assert stats.p999_us == 192.474 and stats.min_us == 6.729 and stats.max_us == 2440.576
    assert stats.samples == 70982
    with pytest.raises(ToolOutputError):
        parse_sockperf("sockperf: ERROR: connect failed\n")


def test_qperf_real_outputs() -> None:
    assert parse_qperf_latency(read("qperf_tcp_lat_loopback.txt")) == 14.9
    verbose = read("qperf_tcp_lat_bw_verbose_loopback.txt")
    assert parse_qperf_latency(verbose) == 33.9
    with pytest.raises(ToolOutputError, match="rc_lat"):
        parse_qperf_latency(read("qperf_rc_lat_no_rdma_device.txt"), "rc_lat")
    assert parse_qperf_latency("tcp_lat:\n    latency  =  1.2 ms\n") == 1200.0


def test_all_reduce_current_layout_and_net_ib_passes() -> None:
    text = read("all_reduce_perf_gfx1151_net_ib.txt")
    table = parse_all_reduce(text)
    assert table.layout == "root/#wrong" and table.complete
    assert table.version == "2.28.3-gfx1151-rccl:a188cf2"
    assert len(table.rows) == 7 and table.rows[0].root == -1 and not table.wrong_rows
    assert table.avg_busbw_gbs == 2.54512 and table.max_busbw_gbs == 5.81
    evidence = parse_transport(text)
    assert evidence.transport == "NET/IB" and evidence.ib_devices == ("rocep194s0:1",)
    status, summary = judge_rccl(table, evidence, ["rocep194s0:1"])
    assert status is Status.PASS and "NET/IB on rocep194s0:1" in summary


def test_socket_fallback_fails_however_fast() -> None:
    text = read("all_reduce_perf_gfx1151_net_socket.txt")
    table = parse_all_reduce(text)
    evidence = parse_transport(text)
    assert evidence.transport == "NET/Socket"
    assert evidence.socket_devices == ("enp194s0np0", "enp1s0")
    status, summary = judge_rccl(table, evidence, ["rocep194s0:1"])
    assert status is Status.FAIL and "NET/Socket" in summary and "however fast" in summary


def test_net_ib_on_another_device_fails() -> None:
    text = read("all_reduce_perf_gfx1151_net_ib.txt")
    status, summary = judge_rccl(parse_all_reduce(text), parse_transport(text), ["mlx5_0:1"])
    assert status is Status.FAIL and "not on the tested mlx5_0:1" in summary


def test_older_layout_error_column_tolerates_rounding_and_na() -> None:
    table = parse_all_reduce(read("all_reduce_perf_old_layout.txt"))
    assert table.layout == "error" and len(table.rows) == 4
    assert table.rows[0].root is None and table.rows[0].out_wrong == 4e-07
    assert table.rows[-1].out_wrong is None  # N/A
    assert not table.wrong_rows


def test_cut_short_rccl_output_gives_no_verdict() -> None:
    text = read("all_reduce_perf_cut_short.txt")
    table = parse_all_reduce(text)
    assert not table.complete
    status, summary = judge_rccl(table, parse_transport(text), ["rocep194s0:1"])
    assert status is Status.ERROR and "cut short" in summary


def test_no_transport_lines_at_warn_level() -> None:
    status, summary = judge_rccl(None, parse_transport("NCCL WARN something\n"), [])
    assert status is Status.ERROR and "NCCL_DEBUG=INFO" in summary
    with pytest.raises(RcclOutputError):
        parse_all_reduce("mpirun: command not found\n")


def test_wrong_results_fail() -> None:
    text = read("all_reduce_perf_gfx1151_net_ib.txt").replace(
        "0.67      0    97.80    0.67    0.67      0", "0.67      3    97.80    0.67    0.67      0")
    table = parse_all_reduce(text)
    assert [r.size_bytes for r in table.wrong_rows] == [65536]
    status, _ = judge_rccl(table, parse_transport(text), ["rocep194s0:1"])
    assert status is Status.FAIL


NCCL_LINE = "node0:13571:13571 [0] NCCL INFO Bootstrap : Using enp10s0"
ROW = "     8388608       2097152     float     sum      -1"


@pytest.mark.parametrize(("line", "stripped"), [
    (" 0: #  Rank  0 Group  0 Pid 291005 on    node005", "#  Rank  0 Group  0 Pid 291005 on    node005"),
    ("12: # Avg bus bandwidth    : 142.735", "# Avg bus bandwidth    : 142.735"),
    (" 0:", ""),
    ("[1,0]<stdout>:# nThread 1 nGpus 1", "# nThread 1 nGpus 1"),
    ("[1,1]<stderr>:Authorization required", "Authorization required"),
    ("[0] " + NCCL_LINE, NCCL_LINE),
    ("[2025-10-16 22:16:08] " + NCCL_LINE, NCCL_LINE),
    ("[1,0]<stdout>:[0] " + NCCL_LINE, NCCL_LINE),
    ("8h200-2:6831:6840 [0] NCCL INFO Using network X", "8h200-2:6831:6840 [0] NCCL INFO Using network X"),
    (ROW, ROW),
])
def test_launcher_prefixes_are_removed_and_nothing_else(line: str, stripped: str) -> None:
    assert strip_launcher_prefix(line) == stripped


def test_nccl_2_29_assigned_plugin_line_names_the_network() -> None:
    log = "lab:1:1 [0] NCCL INFO Assigned NET plugin Socket to comm\n"
    evidence = parse_transport(log)
    assert evidence.networks == ("Socket",) and evidence.transport == "NET/Socket"
    status, summary = judge_rccl(None, evidence, [])
    assert status is Status.FAIL and "NET/Socket" in summary


def test_a_run_with_fewer_ranks_than_nodes_fails() -> None:
    text = "\n".join(line for line in read("all_reduce_perf_gfx1151_net_ib.txt").splitlines()
                     if "Rank  1" not in line)
    table = parse_all_reduce(text)
    assert table.world_size == 1 and table.single_rank_copies is None
    status, summary = judge_rccl(table, parse_transport(text), ["rocep194s0:1"], expected_ranks=2)
    assert status is Status.FAIL and "1 rank(s), not the 2 expected" in summary
    assert judge_rccl(table, parse_transport(text), ["rocep194s0:1"])[0] is Status.PASS


def test_a_third_party_plugin_is_named_not_blamed_on_the_debug_level() -> None:
    evidence = parse_transport("h:1:1 [0] NCCL INFO Using network FastSocket\n")
    assert evidence.transport is None and evidence.plugin == "FastSocket"
    status, summary = judge_rccl(None, evidence, [])
    assert status is Status.WARN and "'FastSocket'" in summary


def test_version_lines_of_every_layout() -> None:
    for line, version in [("NCCL version 2.21.5+cuda12.4", "2.21.5+cuda12.4"),
                          ("h:1:1 [0] NCCL INFO NCCL version 2.29.7+cuda12.9", "2.29.7+cuda12.9"),
                          ("RCCL version : 2.28.3-gfx1151-rccl:a188cf2", "2.28.3-gfx1151-rccl:a188cf2"),
                          ('RCCL version 2.28.3 compiled with ROCm "7.2.0.0-43-fc0010cf6a"', "2.28.3"),
                          ("[1,0]<stdout>:h:21:21 [0] NCCL INFO NCCL version 2.22.3", "2.22.3")]:
        assert parse_transport(line + "\n").version == version
    assert parse_transport("# rccl-tests version 2.18.3-HEAD:418cd5f rccl-headers=23004\n").version is None


def test_sockperf_older_extremes_without_angle_brackets() -> None:
    # the percentile block layout quoted in Mellanox/sockperf PR #73
    text = ("sockperf: ====> avg-latency=1.900 (std-dev=0.100)\n"
            "  sockperf: ---> MAX observation =   42.328\n"
            "  sockperf: ---> percentile 50.000 =    1.861\n"
            "  sockperf: ---> MIN observation =    1.743\n")
    stats = parse_sockperf(text)
    assert (stats.max_us, stats.median_us, stats.min_us) == (42.328, 1.861, 1.743)


def test_duration_mode_latency_is_judged_on_its_average() -> None:
    from strixwizard.live.results import LatencyStats
    from strixwizard.live.verdict import judge_latency
    status, summary = judge_latency(LatencyStats(None, None, 2.5, None, None, None), 8.0, "RDMA")
    assert status is Status.PASS and "average (no median printed)" in summary
    garbage = LatencyStats(None, float("nan"), 2.5, None, None, None)
    assert judge_latency(garbage, 8.0, "RDMA")[0] is Status.ERROR


# -- RCCL 7 / NCCL 2.23+ device lines; `Using network` words; perftest row shapes ------------

#: The device lines of NCCL's net_ib (`NET/IB: [%d] %s:%s:%d/%s provider=...`) and its
#: makeVDevice (`NET/IB : Made virtual device [%d] name=%s speed=%d ndevs=%d`), which RCCL
#: prints since ROCm/rccl PR #2110; CONSTRUCTED from those format strings with an E810's names
#: (irdma: `provider=None`). Published RCCL 7 logs of a Strix Halo pair (ConnectX, mlx5) are in
#: tests/data/real/rccl_7*.txt and read in tests/test_real_outputs.py.
RCCL7_DEVICES = (
    "strix-a:4242:4242 [0] NCCL INFO NET/IB: [0] rocep194s0:uverbs0:1/RoCE provider=None "
    "speed=100000 context=0x55d0c0a0 pciPath=/sys/devices/pci0000:00/0000:00:01.1/0000:c2:00.0 ar=0\n"
    "strix-a:4242:4242 [0] NCCL INFO NET/IB : Made virtual device [0] name=rocep194s0 "
    "speed=100000 ndevs=1\n"
)


def test_rccl7_device_lines_name_the_device_in_use() -> None:
    evidence = parse_transport(RCCL7_DEVICES + "strix-a:4242:4242 [0] NCCL INFO Using network IB\n")
    assert evidence.ib_devices == ("rocep194s0:1",)
    assert evidence.virtual_devices == ("rocep194s0",)
    assert evidence.transport == "NET/IB"
    # so the wrong-device verdict can fire on current RCCL
    status, summary = judge_rccl(None, evidence, ["mlx5_0:1"])
    assert status is Status.FAIL and "rocep194s0:1" in summary


@pytest.mark.parametrize(("line", "network"), [
    ("h:1:1 [0] NCCL INFO Using network IB", "IB"),
    ("h:1:1 [0] NCCL INFO Using network Socket (plugin v8)", "Socket"),
    ("h:1:1 [0] NCCL INFO Using network IBext_v8, GDR off", "IBext_v8"),
    ("h:1:1 [0] NCCL INFO Using network AWS Libfabric", "AWS Libfabric"),
    ("h:1:1 [0] NCCL INFO Assigned NET plugin IB to comm", "IB"),
])
def test_the_network_is_the_first_word_after_using_network(line: str, network: str) -> None:
    assert parse_transport(line + "\n").networks == (network,)


def test_a_perftest_row_with_more_cells_than_its_header_is_refused() -> None:
    text = (" #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]\n"
            " 65536      5000             11030.07            11029.34           0.176470     7\n"
            "---------------------------------------------------------------------------------------\n")
    table = parse_perftest(text)
    assert table.rows == () and not table.complete
    assert table.refused_rows == ("65536      5000             11030.07            11029.34"
                                  "           0.176470     7",)


def test_duration_mode_header_keeps_its_unbracketed_last_column() -> None:
    text = (" #bytes #iterations    t_avg[usec]    tps average\n"
            " 2       1234567         1.62           617283.95\n"
            "---------------------------------------------------------------------------------------\n")
    table = parse_perftest(text)
    assert [c.name for c in table.columns] == ["#bytes", "#iterations", "t_avg", "tps average"]
    assert table.complete and table.rows[0]["t_avg"] == 1.62 and not table.refused_rows


#: `ib_write_lat --out_json` / `ib_write_bw --report_gbits --out_json` reports CONSTRUCTED from
#: perftest's own format strings (src/perftest_parameters.c write_test_info_to_file,
#: REPORT_FMT_LAT_JSON and REPORT_FMT_JSON in src/perftest_parameters.h, linux-rdma/perftest).
PERFTEST_LAT_JSON = """{
"test_info": {
"test": "RDMA_Write_Latency_Test",
"Dual_port": "OFF",
"Device": "rocep194s0",
"Number_of_qps": 1,
"Transport_type": "IB",
"Connection_type": "RC",
"Using_SRQ": "OFF",
"Mtu": 4096,
"Link_type": "Ethernet",
"GID_index": 1,
"Data_ex_method": "Ethernet"
},
"results": {
"MsgSize": 64,
"n_iterations": 1000,
"t_min": 4.91,
"t_max": 9.72,
"t_typical": 5.19,
"t_avg": 5.23,
"t_stdev": 0.21,
"percentile_99": 6.02,
"percentile_99.9": 9.72
}
}
"""
PERFTEST_BW_JSON = """{
"test_info": {
"test": "RDMA_Write_BW_Test",
"Device": "rocep194s0",
"Number_of_qps": 1,
"Link_type": "Ethernet"
},
"results": {
"MsgSize": 65536,
"n_iterations": 5000,
"BW_peak": 50.71,
"BW_average": 50.64,
"MsgRate": 0.096585
}
}
"""


def test_perftest_out_json_reads_as_the_text_table() -> None:
    from strixwizard.live.perftest_output import parse_perftest_json

    lat = parse_perftest_json(PERFTEST_LAT_JSON)
    stats = latency_stats(lat, lat.rows[0])
    assert (stats.median_us, stats.avg_us, stats.p99_us, stats.samples) == (5.19, 5.23, 6.02, 1000)
    assert lat.is_latency and lat.complete and lat.params["Device"] == "rocep194s0"
    bw = parse_perftest_json(PERFTEST_BW_JSON)
    assert bw.is_bandwidth and bandwidth_gbps(bw, bw.rows[0]) == 50.64
    assert bw.unit("BW average") == "Gb/sec"  # MsgRate x MsgSize: 50.64 Gb/s, not MB/s
    with pytest.raises(PerftestParseError, match="did not ask for --report_gbits"):
        parse_perftest_json(PERFTEST_BW_JSON, report_gbits=False)  # the run and the report disagree


def test_perftest_out_json_refuses_what_is_not_its_report() -> None:
    from strixwizard.live.perftest_output import parse_perftest_json

    qos = PERFTEST_BW_JSON.replace('"MsgSize": 65536,\n', '"MsgSize": 65536,\nsl: 3,\n')
    for text in ("", "{}", '{"results": {"avg_lat": 5.2}}', qos):  # raw-QoS: `sl` unquoted
        with pytest.raises(PerftestParseError):
            parse_perftest_json(text)


def test_out_json_is_detected_from_help() -> None:
    from strixwizard.live.perftest_output import supports_json

    # perftest 4.5's usage lines (src/perftest_parameters.c usage())
    assert supports_json("      --out_json  Save the report in a json file\n")
    assert not supports_json(" -F, --CPU-freq  Do not show a warning even if cpufreq_ondemand ...\n")


def test_out_json_is_detected_on_the_installed_perftest() -> None:
    """The real `ib_write_bw --help` of this machine's perftest (Debian 4.5+0.17 here)."""
    import shutil
    import subprocess

    from strixwizard.live.perftest_output import supports_json

    tool = shutil.which("ib_write_bw")
    if tool is None:
        pytest.skip("perftest is not installed here")
    done = subprocess.run([tool, "--help"], capture_output=True, text=True, timeout=30, check=False)
    assert supports_json(done.stdout + done.stderr)


# -- rccl-tests / nccl-tests `-J, --output_file FILE.json` ---------------------------------

#: The usage lines as rccl-tests' src/common.cu prints them (ROCm/rocm-systems
#: projects/rccl-tests; nccl-tests' -J line is the same text). The -X/-Z lines are RCCL's own
#: Reporter, not the -J document.
RCCL_TESTS_USAGE_WITH_J = (
    "\t[-C,--report_cputime <0/1>] \n"
    "\t[-J,--output_file <file> write output to filepath, if accessible. Infer type from suffix "
    "(only json supported presently.)] \n"
    "\t[-Z,--rccl_output_format <output format <csv|json>] \n"
    "\t[-X,--rccl_output_file <file> RCCL Reporter output file for csv/json (used with -Z)] \n")
RCCL_TESTS_USAGE_BEFORE_J = (
    "\t[-C,--report_cputime <0/1>] \n"
    "\t[-Z,--rccl_output_format <output format <csv|json>] \n"
    "\t[-X,--rccl_output_file <file> RCCL Reporter output file for csv/json (used with -Z)] \n")


def test_the_j_option_is_told_from_the_usage_text() -> None:
    assert supports_json_file(RCCL_TESTS_USAGE_WITH_J)
    assert not supports_json_file(RCCL_TESTS_USAGE_BEFORE_J)
    assert not supports_json_file("")


def test_the_j_document_reads_as_the_text_table_of_the_same_run() -> None:
    doc = parse_collective_json((DATA / "all_reduce_perf_gfx1151_J_report.json").read_text())
    text = parse_all_reduce((DATA / "all_reduce_perf_gfx1151_net_ib.txt").read_text())
    assert [r.size_bytes for r in doc.rows] == [r.size_bytes for r in text.rows]
    assert [r.out_busbw_gbs for r in doc.rows] == [r.out_busbw_gbs for r in text.rows]
    assert [r.in_time_us for r in doc.rows] == [r.in_time_us for r in text.rows]
    assert doc.rows[0].root == -1 and doc.rows[0].redop == "sum" and doc.rows[0].out_wrong == 0
    assert doc.complete and doc.avg_busbw_gbs == pytest.approx(2.54512) and doc.out_of_bounds_ok
    assert doc.version == "2.28.3"  # rccl_version 22803
    assert doc.world_size == 2 and [r.host for r in doc.ranks] == ["stxh-4602-MAPLE", "stxh-4603-BIRCH"]
    assert doc.errors == () and doc.single_rank_copies is None and doc.wrong_rows == ()


def test_a_j_document_cut_short_or_foreign_is_refused() -> None:
    whole = (DATA / "all_reduce_perf_gfx1151_J_report.json").read_text()
    for bad in (whole[: whole.index(',"out_of_bounds"')], "{}", "[]", '{"results":[{"size":8}]}'):
        with pytest.raises(RcclOutputError):
            parse_collective_json(bad)


def test_j_document_without_validation_and_with_cpu_time() -> None:
    row = ('{"size":8,"count":2,"type":"float","redop":"sum","root":"    -1",'
           '"out_of_place":{"cpu_time":30.000000,"alg_bw":0.000267,"bus_bw":0.000267,"nwrong":null},'
           '"in_place":{"cpu_time":31.000000,"alg_bw":0.000258,"bus_bw":0.000258,"nwrong":null},'
           '"actual_iterations":20,"experiment_name":""}')
    doc = parse_collective_json('{"version":3,"nccl_version":22903,"results":[' + row + "]}")
    assert doc.rows[0].out_wrong is None and doc.rows[0].out_time_us == 30.0
    assert doc.version == "2.29.3" and not doc.complete  # no average: not a finished run


def test_rccl_verdict_takes_the_figures_from_the_j_document() -> None:
    from strixwizard.live.rccl import rccl_measurement

    log = "\n".join(line for line in (DATA / "all_reduce_perf_gfx1151_net_ib.txt").read_text().splitlines()
                    if "NCCL INFO" in line)  # the log alone: no text table
    doc = parse_collective_json((DATA / "all_reduce_perf_gfx1151_J_report.json").read_text())
    m = rccl_measurement(("a", "b"), log, ["rocep194s0:1"], "path", from_json=doc, expected_ranks=2)
    assert m.status is Status.PASS and "average busbw 2.55 GB/s" in m.summary, m.summary
    assert m.figure == pytest.approx(5.81) and m.detail["rccl_version"] == "2.28.3"
    assert rccl_measurement(("a", "b"), log, ["rocep194s0:1"], "path").status is Status.ERROR


def test_single_rank_copies_are_told_from_the_text_even_with_a_j_document() -> None:
    """An MPI-less build under `mpirun -np 2`: each copy writes its own document (the second
    with `.0` added, as jsonOutputInit does on EEXIST), each alone a one-rank run."""
    from strixwizard.live.rccl import rccl_measurement

    copies = (Path(__file__).parent / "data" / "real"
              / "nccl_tests_mpirun_np2_without_mpi_single_rank_copies.txt").read_text()
    said = "# Writing JSON output to /tmp/r.json\n# Writing JSON output to /tmp/r.json.0\n"
    assert json_files_written(said + copies, "/tmp/r.json") == ("/tmp/r.json", "/tmp/r.json.0")
    # a name that is not the one asked for (or its .N copy) is never read or removed
    other = "# Writing JSON output to /etc/passwd\n# Writing JSON output to /tmp/r.json.x\n"
    assert json_files_written(other + said, "/tmp/r.json") == ("/tmp/r.json", "/tmp/r.json.0")
    doc = parse_collective_json((DATA / "all_reduce_perf_gfx1151_J_report.json").read_text())
    m = rccl_measurement(("a", "b"), said + copies, [], "path", from_json=doc, expected_ranks=2)
    assert m.status is Status.FAIL and "single-rank copies" in m.summary, m.summary


def test_perftest_out_json_whose_unit_cannot_be_told_is_refused_with_the_reason() -> None:
    from strixwizard.live.perftest_output import parse_perftest_json

    neither = PERFTEST_BW_JSON.replace('"BW_average": 50.64', '"BW_average": 400.0')
    with pytest.raises(PerftestParseError, match="fits neither Gb/sec nor MB/sec"):
        parse_perftest_json(neither)
    no_rate = PERFTEST_BW_JSON.replace(',\n"MsgRate": 0.096585', "")
    with pytest.raises(PerftestParseError, match="names no unit"):
        parse_perftest_json(no_rate)
    assert parse_perftest_json(no_rate, report_gbits=True).unit("BW average") == "Gb/sec"  # as asked


def test_a_node_programs_event_line_nested_thousands_deep_is_not_an_event() -> None:
    """A line nested thousands deep was a RecursionError out of `output_of`. A NaN stays in its
    event for the event's typed reader to refuse with the reason (tests/test_node_figures.py)."""
    from strixwizard.live.hosts import output_of

    text = "\n".join([
        '{"event": "result", "ns": 5200}',
        '{"event": ' * 3000 + "1" + "}" * 3000,
        "not json",
    ])
    assert output_of(text, '{"event"') == [{"event": "result", "ns": 5200}]
