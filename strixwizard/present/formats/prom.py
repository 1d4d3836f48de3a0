"""The node_exporter textfile (`present/prometheus.py`): what `--prometheus FILE` writes."""

from __future__ import annotations

from typing import TextIO

from strixwizard.present.formats.base import DoctorRun, Format


def _write(run: DoctorRun, out: TextIO) -> None:
    from strixwizard.present.prometheus import doctor_registry, metrics_text

    out.write(metrics_text(doctor_registry(run.report.to_json(), run.exit_code)))


FORMAT = Format("prom", "text/plain; version=0.0.4", "prom",
                "the Prometheus textfile (as --prometheus writes)", _write)
