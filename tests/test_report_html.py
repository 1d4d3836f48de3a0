"""The HTML report's pictures: an all-pairs latency heatmap, a latency distribution per link
and the predicted decode tok/s, drawn as inline SVG from the test run's JSON, escaped, with
no network; loaded in a real headless Chromium (DOM after load, and a screenshot that is
not blank and shows the charts' colours)."""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from checks import ALL
from strixwizard.charts import TRANSPORT_COLOURS, heat_colour, predictions, run_pictures
from strixwizard.checking.engine import Report, select_checks
from strixwizard.live.demo import demo_results
from strixwizard.live.report import MeasurementReport as RunReport
from strixwizard.live.report import matrix_json
from strixwizard.live.schedule import rounds
from strixwizard.present.report import to_html
from strixwizard.services.discover import discover
from strixwizard.services.nodes import RunRequest
from strixwizard.site import Thresholds
from strixwizard.tui.export import save_report
from tests.support.png import png_pixels

HOSTILE = '<b id="x">node-c</b>&"'
NODES = ["node-a", "node-b", HOSTILE]
SVG_NS = "{http://www.w3.org/2000/svg}"


def _decode_block() -> dict[str, Any]:
    rows = []
    for transport, source, figures in (
            ("rdma", "recorded", [(1, 4.1, 0.0, 240.0), (2, 7.6, 12.0, 120.0), (4, 13.2, 16.0, 60.0)]),
            ("tcp", "measured", [(1, 4.1, 0.0, 240.0), (2, 5.2, 70.0, 120.0), (4, 6.0, 100.0, 60.0)]),
            ("usb4", "estimated", [(2, 6.3, 40.0, 120.0)])):
        for tp, rate, comm, comp in figures:
            rows.append({"transport": transport, "tp": tp, "tokens_per_s": rate, "t_comm_ms": comm,
                         "t_comp_ms": comp, "comm_share": comm / (comm + comp), "source": source})
    return {"model": {"name": "Llama-3.1-70B"}, "predictions": rows}


@pytest.fixture(scope="module")
def tests_document() -> dict[str, Any]:
    """A demo matrix run over three nodes (every figure replayed from the recordings), with a decode block."""
    thresholds = Thresholds()
    results = list(demo_results("matrix", NODES, thresholds))
    report = RunReport(command="matrix", site="demo", thresholds=thresholds, results=results, demo=True)
    report.matrix = matrix_json(NODES, results, rounds(NODES), [])
    document = report.to_json()
    document["outcome"] = "done"
    document["decode"] = _decode_block()
    return document


@pytest.fixture(scope="module")
def doctor_report() -> Report:
    return discover(RunRequest(demo=True), None, select_checks(ALL, ["link.mtu"], []), plan=False).report


def _svgs(page: str) -> list[ET.Element]:
    return [ET.fromstring(m) for m in re.findall(r"<svg .*?</svg>", page, flags=re.S)]


def _texts(svg: ET.Element) -> list[str]:
    return ["".join(t.itertext()) for t in svg.iter(f"{SVG_NS}text")]


def test_charts_are_wellformed_escaped_svg(tests_document: dict[str, Any], doctor_report: Report) -> None:
    page = to_html(doctor_report, sections={"live_tests": tests_document})
    svgs = _svgs(page)
    labels = [s.get("aria-label") for s in svgs]
    # two heatmaps (RDMA, TCP), one distribution per pair (3), the decode chart
    assert labels[:2] == ["RDMA one-way latency, all pairs", "TCP one-way latency, all pairs"]
    assert sum("latency distribution" in (label or "") for label in labels) == 3
    assert labels[-1] == "Predicted decode tokens per second: Llama-3.1-70B"
    assert len(svgs) == 6
    # the node name is data: escaped text everywhere, never an element or a broken attribute
    assert "<b id=" not in page and "&lt;b id=&quot;x&quot;&gt;node-c" in page
    heat_texts = _texts(svgs[0])
    assert "node-a" in heat_texts and any(t.startswith('<b id="x">node-') for t in heat_texts)
    assert "<script" not in page and "http://" not in page.replace('xmlns="http://www.w3.org/2000/svg"', "")
    decode_texts = _texts(svgs[-1])
    assert {"TP = 1", "TP = 2", "TP = 4", "13.2", "meas.", "est.", "rec.", "rdma", "tcp", "usb4"} <= set(
        decode_texts)
    columns = ["min", "median", "average", "p99", "p99.9", "max"]
    assert [t for t in _texts(svgs[2]) if t in columns] == columns


def test_charts_come_from_the_saved_json(tmp_path: Path, tests_document: dict[str, Any],
                                         doctor_report: Report) -> None:
    written = save_report(doctor_report, tmp_path / "out", {"source": "demo"}, {"live_tests": tests_document})
    saved = json.loads(written["json"].read_text())["live_tests"]
    assert saved["decode"] == tests_document["decode"]
    assert "\n".join(run_pictures(saved)) in written["html"].read_text()


def test_the_wizards_test_document_gets_the_pictures(tests_document: dict[str, Any]) -> None:
    """The Report step passes its run through `tests_document`: a matrix over three nodes."""
    from strixwizard.live.results import Measurement
    from strixwizard.tui.extras import tests_document as wizard_document

    results = [Measurement.from_json(r) for r in tests_document["results"]]
    document = wizard_document("demo", Thresholds(), results, True, NODES, "done")
    assert document is not None
    labels = [s.get("aria-label") for s in _svgs("".join(run_pictures(document)))]
    assert labels[:2] == ["RDMA one-way latency, all pairs", "TCP one-way latency, all pairs"]
    # the Test step's "what this fabric buys you" comes along: its decode chart is drawn too
    assert len(labels) == 6 and labels[-1].startswith("Predicted decode tokens per second: ")


def test_decode_chart_shows_the_first_batch_and_models_that_do_not_fit() -> None:
    """`test decode` rows also carry `batch` and `fits`: one batch is drawn (the smallest), and
    a TP size whose nodes cannot hold the weights is an outline labelled "no fit"."""
    def row(tp: int, batch: int, rate: float, fits: bool = True) -> dict[str, Any]:
        return {"transport": "rdma", "tp": tp, "batch": batch, "tokens_per_s": rate, "t_comm_ms": 1.0,
                "t_comp_ms": 9.0, "comm_share": 0.1, "source": "measured", "fits": fits}

    decode = {"model": {"name": "M"}, "predictions": [row(1, 1, 1.5, False), row(2, 1, 3.0), row(2, 8, 20.0)]}
    page = "".join(run_pictures({"decode": decode}))
    (svg,) = _svgs(page)
    assert svg.get("aria-label") == "Predicted decode tokens per second: M, batch 1"
    texts = _texts(svg)
    assert "20.0" not in texts and {"1.5", "3.0", "no fit", "meas.", "TP = 1", "TP = 2"} <= set(texts)
    bars = [r for r in svg.iter(f"{SVG_NS}rect") if "bar" in (r.get("class") or "")]
    assert [(b.get("class"), b.get("fill")) for b in bars] == [("bar no-fit", "none"),
                                                             ("bar", TRANSPORT_COLOURS["rdma"])]
    assert "batches 1, 8 are in the JSON" in page


def test_heatmap_colours_and_missing_cells() -> None:
    grid = {"a": {"b": 5.0, "c": None}, "b": {"a": 5.0, "c": 10.0}, "c": {"a": None, "b": 10.0}}
    page = "".join(run_pictures({"matrix": {"nodes": ["a", "b", "c"], "rdma_latency_us": grid}}))
    (svg,) = _svgs(page)
    fills = [r.get("fill") for r in svg.iter(f"{SVG_NS}rect") if r.get("class") == "cell"]
    assert fills.count(heat_colour(0.0)) == 2 and fills.count(heat_colour(1.0)) == 2
    assert _texts(svg).count("n/a") == 2
    # within a few percent of each other, no cell is red: red needs twice the lowest
    close = {"a": {"b": 6.57}, "b": {"a": 6.67}}
    (svg,) = _svgs("".join(run_pictures({"matrix": {"nodes": ["a", "b"], "tcp_latency_us": close}})))
    assert heat_colour(1.0) not in [r.get("fill") for r in svg.iter(f"{SVG_NS}rect")]


def test_no_decode_block_no_decode_chart_and_bad_rows_are_left_out(tests_document: dict[str, Any]) -> None:
    without = {k: v for k, v in tests_document.items() if k != "decode"}
    assert not any("decode" in (s.get("aria-label") or "") for s in _svgs("".join(run_pictures(without))))
    bad = {"predictions": [{"transport": "rdma", "tp": "2", "tokens_per_s": 1.0}, "x",
                           {"transport": "rdma", "tp": 2, "tokens_per_s": float("nan")},
                           {"transport": "rdma", "tp": True, "tokens_per_s": 3.0},
                           {"transport": "tcp", "tp": 2, "tokens_per_s": 3.0, "source": "measured"}]}
    assert [(p.transport, p.tp) for p in predictions(bad)] == [("tcp", 2)]
    assert predictions(None) == [] and predictions({"predictions": {}}) == []
    assert run_pictures({"results": [], "matrix": None, "decode": {"predictions": []}}) == []


# -- a real browser ------------------------------------------------------------------------------
def _chromium() -> str:
    found = shutil.which("chromium")
    assert found, "chromium not found: Debian's chromium package provides it (scripts/install.sh test)"
    return found


def _browser(tmp_path: Path, url: str, *flags: str) -> subprocess.CompletedProcess[str]:
    argv = [_chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
            "--no-first-run", "--disable-extensions", "--disable-background-networking",
            f"--user-data-dir={tmp_path / 'chromium-profile'}", *flags, url]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=90, check=False,
                          stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr[-2000:]
    return done


def test_report_renders_in_headless_chromium(tmp_path: Path, tests_document: dict[str, Any],
                                             doctor_report: Report) -> None:
    written = save_report(doctor_report, tmp_path / "out", {"source": "demo"}, {"live_tests": tests_document})
    url = written["html"].resolve().as_uri()

    dom = _browser(tmp_path, url, "--dump-dom").stdout
    assert dom.count("<svg") == 6
    for label in ("RDMA one-way latency, all pairs", "TCP one-way latency, all pairs", "p99.9", "TP = 4",
                  "Predicted decode tokens per second: Llama-3.1-70B", "est.", "rec.", "meas."):
        assert label in dom, label
    assert "<b id=" not in dom and "&lt;b id=\"x\"&gt;node-c" in dom  # still text after parsing

    shot = tmp_path / "report.png"
    _browser(tmp_path, url, "--window-size=1200,3600", "--force-device-scale-factor=0.5",
             f"--screenshot={shot}")
    width, height, rows = png_pixels(shot.read_bytes())
    assert (width, height) == (600, 1800)
    colours = {row[i:i + 3] for row in rows for i in range(0, len(row), 3)}
    assert len(colours) > 100, f"{len(colours)} colours: a blank or near-blank page"
    # the charts' own solid fills are on screen: the fastest heatmap cell, the RDMA and TCP bars
    for hex_colour in (heat_colour(0.0), TRANSPORT_COLOURS["rdma"], TRANSPORT_COLOURS["tcp"]):
        assert bytes.fromhex(hex_colour[1:]) in colours, hex_colour


# -- what the browser draws: every label inside its picture, none on an axis, RDMA readable -----------
MEASURE = """<script>
const out = [];
for (const svg of document.querySelectorAll("svg.chart")) {
  const box = svg.getBoundingClientRect();
  const items = [];
  for (const el of svg.querySelectorAll("text, rect, circle, line")) {
    const r = el.getBoundingClientRect();
    items.push({tag: el.tagName, cls: el.getAttribute("class") || "", text: el.textContent,
                fill: el.getAttribute("fill") || "", l: r.left - box.left, t: r.top - box.top,
                r: r.right - box.left, b: r.bottom - box.top});
  }
  out.push({label: svg.getAttribute("aria-label"), w: box.width, h: box.height, items: items});
}
const pre = document.createElement("pre");
pre.id = "boxes";
pre.textContent = JSON.stringify(out);
document.body.appendChild(pre);
</script>"""


def _latency(transport: str, tool: str, source: str, stats: dict[str, float]) -> dict[str, Any]:
    return {"kind": "latency", "role": "verdict", "transport": transport, "tool": tool, "source": source,
            "pair": ["node-a", "node-b"], "status": "pass", "summary": f"{transport}: a stand-in",
            "figure": stats["median"], "unit": "µs", "threshold": None, "path": None,
            "latency_us": stats}


#: RDMA as the demo records it, beside TCP on a loaded loopback: a p99.9 of 15 ms and a max of 40 ms
LOADED = [_latency("rdma", "ib_write_lat", "replayed",
                   {"min": 4.9, "median": 5.19, "avg": 5.3, "p99": 6.5, "p99_9": 9.1, "max": 20.0}),
          _latency("tcp", "strixwizard tcp ping-pong", "measured",
                   {"min": 8.0, "median": 11.0, "avg": 40.0, "p99": 900.0, "p99_9": 15000.0,
                    "max": 40000.0})]


def _drawn(tmp_path: Path, document: dict[str, Any], doctor_report: Report) -> list[dict[str, Any]]:
    """Every chart of the saved HTML report as headless Chromium lays it out: each element's
    box relative to its svg."""
    written = save_report(doctor_report, tmp_path / "out", {"source": "demo"}, {"live_tests": document})
    page = written["html"].read_text().replace("</body>", MEASURE + "</body>")
    measured = tmp_path / "measured.html"
    measured.write_text(page)
    dom = _browser(tmp_path, measured.resolve().as_uri(), "--window-size=1400,3000", "--dump-dom").stdout
    found = re.search(r'<pre id="boxes">(.*?)</pre>', dom, flags=re.S)
    assert found, dom[-2000:]
    charts: list[dict[str, Any]] = json.loads(html.unescape(found.group(1)))
    return charts


def test_every_label_lies_inside_its_chart_in_chromium(tmp_path: Path, tests_document: dict[str, Any],
                                                      doctor_report: Report) -> None:
    document = {**tests_document, "results": [*tests_document["results"], *LOADED]}
    charts = _drawn(tmp_path, document, doctor_report)
    assert len(charts) == 6
    for chart in charts:
        for item in chart["items"]:
            if item["tag"] != "text":
                continue
            inside = (item["l"] >= -0.5 and item["t"] >= -0.5 and item["r"] <= chart["w"] + 0.5
                      and item["b"] <= chart["h"] + 0.5)
            assert inside, (chart["label"], item["text"], item, chart["w"], chart["h"])


def test_median_labels_clear_the_axis_and_rdma_stays_readable_beside_a_loaded_tcp(
        tmp_path: Path, tests_document: dict[str, Any], doctor_report: Report) -> None:
    """Stand-in figures (labelled so: not a published run) shaped like the demo's own loopback
    TCP, whose p99.9 was 3.9 ms here, and the demo's recorded RDMA."""
    charts = _drawn(tmp_path, {**tests_document, "matrix": None, "decode": None, "results": LOADED},
                    doctor_report)
    (chart,) = [c for c in charts if "latency distribution" in (c["label"] or "")]
    items = chart["items"]
    rules = [i for i in items if i["tag"] == "line" and i["r"] - i["l"] > 0.5 * chart["w"]]
    axis = max(rules, key=lambda i: i["t"])  # the x axis: the lowest line across the plot
    plot_top = min(i["t"] for i in items if i["tag"] == "line")
    plot_h = axis["t"] - plot_top
    for label in [i for i in items if i["cls"] == "median-label"]:
        assert label["b"] < axis["t"] - 1, ("median label on the axis", label, axis)
        for other in [i for i in items if i["cls"] == "stat-label"]:
            assert label["b"] <= other["t"] or label["t"] >= other["b"], (label, other)
    rdma = [i for i in items if i["tag"] == "circle" and i["fill"] == TRANSPORT_COLOURS["rdma"]]
    assert len(rdma) == 6
    spread = max(i["b"] for i in rdma) - min(i["t"] for i in rdma)
    assert spread >= 0.2 * plot_h, f"RDMA squashed: its six points span {spread:.0f} of {plot_h:.0f} px"
    median = rdma[1]
    assert axis["t"] - median["b"] >= 0.1 * plot_h, "RDMA's median sits in the bottom band"
    texts = [i["text"] for i in items if i["tag"] == "text"]
    assert any("15000" in t for t in texts) and any("40000" in t for t in texts)  # clipped, still said
