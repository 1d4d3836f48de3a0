"""On the namespace lab, for real: two `test matrix` runs over TCP between three hosts write
their figures to the Prometheus textfile and the history; `strixwizard history` gives each
link's two medians back, and the HTML heatmap shows the same figures."""

from __future__ import annotations

import re
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from strixwizard.charts import run_pictures
from tests.support.cli import run_cli
from tests.support.lab import Lab, lab_fixture

lab3 = lab_fixture(3, scope="module", name="lab3")
TOOL = "strixwizard tcp ping-pong"


def test_two_real_runs_reach_the_textfile_the_history_and_the_heatmap(lab3: Lab, tmp_path: Path) -> None:
    site = lab3.write_site_yaml(tmp_path / "lab.yaml")
    history, prom = tmp_path / "history.sqlite", tmp_path / "strixwizard.prom"
    argv = ("test", "matrix", "--site", str(site), "--json", "--transport", "tcp", "--seconds", "0.3",
            "--no-references", "--history", str(history), "--prometheus", str(prom))
    runs = [run_cli(*argv, timeout=180) for _ in range(2)]
    docs = [r.json() for r in runs]
    assert all(r.rc == 0 for r in runs), [r.stderr for r in runs]

    medians = {(s.labels["a"], s.labels["b"]): s.value
               for family in text_string_to_metric_families(prom.read_text())
               for s in family.samples
               if s.name == "strixwizard_link_latency_median_microseconds" and s.labels["tool"] == TOOL}
    tcp = {tuple(r["pair"]): r for r in docs[1]["results"] if r["tool"] == TOOL}
    assert len(tcp) == 3 and medians == {pair: r["latency_us"]["median"] for pair, r in tcp.items()}

    listed = run_cli("history", "--history", str(history), "--site", str(site), "--json")
    assert listed.rc in (0, 1), listed.stderr  # 1 only if the loaded machine made a link 10% slower
    series = {tuple(link["pair"]): link for link in listed.json()["links"] if link["tool"] == TOOL}
    for pair in tcp:
        figures = [p["figure"] for p in series[pair]["points"]]
        assert figures == [next(r["figure"] for r in doc["results"]
                                if r["tool"] == TOOL and tuple(r["pair"]) == pair) for doc in docs]
        assert len(series[pair]["sparkline"]) == 2
    text = run_cli("history", "--history", str(history), "--site", str(site)).stdout
    assert text.count(f"TCP latency ({TOOL})") == 3

    heatmap = next(p for p in run_pictures(docs[1]) if 'aria-label="TCP one-way latency, all pairs"' in p)
    cells = re.findall(r'class="cell-value">([0-9.]+)<', heatmap)
    assert sorted(cells) == sorted(f"{r['figure']:.2f}" for r in tcp.values() for _ in (0, 1))
