"""The Prometheus text of a `doctor` or `test` run: what `--prometheus FILE` writes (the
node_exporter textfile, `cli/prometheus.py` writes it) and `doctor --format prom` prints.

The metrics are read from the run's own JSON document (`doctor --json`, `test --json`),
so the file says exactly what the JSON says: a plain dict in, no type of a higher layer.
`prometheus_client` makes them (a registry per run) and spells them out; it is imported
only when they are asked for, so `doctor` stays fast without them.

A status is a number, the order of "worst status" (`STATUS_VALUES`): 0 pass, 1 skip,
2 warn, 3 error, 4 fail; so `max()` over a site is its worst verdict and an alert is
`strixwizard_check_status >= 4`.
"""

from __future__ import annotations

import datetime
import math
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from strixwizard import __version__
from strixwizard.model import Status

if TYPE_CHECKING:
    from prometheus_client import CollectorRegistry

STATUS_VALUES = {status.value: status.rank for status in Status}
PREFIX = "strixwizard"
_MAPPING = ", ".join(f"{value} {name}" for name, value in sorted(STATUS_VALUES.items(), key=lambda i: i[1]))


def status_value(status: object) -> float:
    """The number of a status (`STATUS_VALUES`); anything unknown counts as an error."""
    return float(STATUS_VALUES.get(str(status), Status.ERROR.rank))


def _timestamp(text: object) -> float | None:
    try:
        moment = datetime.datetime.fromisoformat(str(text))
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.UTC)
    return moment.timestamp()


def _number(value: object) -> float | None:
    """A finite number as a float, else None: never OverflowError (a 400-digit int)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        number = float(value)
    except OverflowError:
        return None
    return number if math.isfinite(number) else None


def _registry(command: str) -> CollectorRegistry:
    from prometheus_client import CollectorRegistry, Info

    registry = CollectorRegistry()
    Info(PREFIX, "the strixwizard version that wrote this file", ["command"],
         registry=registry).labels(command=command).info({"version": __version__})
    return registry


def _run_metrics(registry: CollectorRegistry, kind: str, document: dict[str, Any],
                 labels: dict[str, str]) -> None:
    from prometheus_client import Gauge

    names = list(labels)
    Gauge(f"{PREFIX}_{kind}_status", f"worst verdict of the {kind} run ({_MAPPING})", names,
          registry=registry).labels(**labels).set(status_value(document.get("status")))
    exit_code = _number(document.get("exit_code"))
    if exit_code is not None:
        Gauge(f"{PREFIX}_{kind}_exit_code", f"exit status of the {kind} run (0 ok, 1 fail, 2 no verdict)",
              names, registry=registry).labels(**labels).set(exit_code)
    moment = _timestamp(document.get("generated_at"))
    if moment is not None:
        Gauge(f"{PREFIX}_{kind}_last_run_timestamp_seconds", f"when the {kind} run finished (Unix time)",
              names, registry=registry).labels(**labels).set(moment)


def doctor_registry(document: dict[str, Any], exit_code: int | None = None) -> CollectorRegistry:
    """The metrics of a `doctor --json` document (and the exit status the run returns)."""
    from prometheus_client import Gauge

    registry = _registry("doctor")
    site = str(document.get("site") or "")
    run = document if exit_code is None else {**document, "exit_code": exit_code}
    _run_metrics(registry, "doctor", run, {"site": site})
    summary = Gauge(f"{PREFIX}_doctor_checks", "checks per status", ["site", "status"], registry=registry)
    for status in Status:
        summary.labels(site=site, status=status.value).set(
            _number((document.get("summary") or {}).get(status.value)) or 0)
    checks = Gauge(f"{PREFIX}_check_status", f"status of one check on one host or entity ({_MAPPING})",
                   ["site", "check", "host", "entity"], registry=registry)
    worst: dict[tuple[str, str, str], float] = {}
    for check in document.get("checks") or []:
        key = (str(check.get("id")), str(check.get("host") or ""), str(check.get("entity") or ""))
        worst[key] = max(worst.get(key, 0.0), status_value(check.get("status")))
    for (check_id, host, entity), value in worst.items():
        checks.labels(site=site, check=check_id, host=host, entity=entity).set(value)
    reachable = Gauge(f"{PREFIX}_host_reachable", "1 when doctor could read the host", ["site", "host"],
                      registry=registry)
    for host in document.get("hosts") or []:
        reachable.labels(site=site, host=str(host.get("name"))).set(1 if host.get("reachable") else 0)
    links = Gauge(f"{PREFIX}_link_status", f"worst check of one fabric link ({_MAPPING})",
                  ["site", "link", "transport", "rdma"], registry=registry)
    for link in document.get("links") or []:
        links.labels(site=site, link=str(link.get("id")), transport=str(link.get("transport")),
                     rdma="true" if link.get("rdma") else "false").set(status_value(link.get("status")))
    return registry


def counter_deltas(counters: object) -> Iterator[tuple[str, str, str, str, float]]:
    """(host, device, counter, kind, delta) of a test document's `counters`, in either shape:
    a list of `{"host", "device", "counter", "delta", "kind"?}` (or `"deltas": {counter:
    delta}`), or `{host: {device: {counter: delta}}}`. Anything else, or no `counters` at all,
    gives none."""
    if isinstance(counters, dict):
        for host, devices in counters.items():
            for device, values in (devices.items() if isinstance(devices, dict) else ()):
                for name, delta in (values.items() if isinstance(values, dict) else ()):
                    if (number := _number(delta)) is not None:
                        yield str(host), str(device), str(name), "", number
        return
    for entry in counters if isinstance(counters, list) else []:
        if not isinstance(entry, dict):
            continue
        host, device = str(entry.get("host") or ""), str(entry.get("device") or entry.get("port") or "")
        kind = str(entry.get("kind") or "")
        deltas = entry.get("deltas")
        pairs = deltas.items() if isinstance(deltas, dict) else [
            (entry.get("counter") or entry.get("name"), entry.get("delta"))]
        for name, delta in pairs:
            if name is not None and (number := _number(delta)) is not None:
                yield host, device, str(name), kind, number


def live_test_registry(document: dict[str, Any]) -> CollectorRegistry:
    """The metrics of a `test --json` document: the run, each link's figures, counter deltas."""
    from prometheus_client import Gauge

    registry = _registry("test")
    site, command = str(document.get("site") or ""), str(document.get("command") or "test")
    _run_metrics(registry, "test", document, {"site": site, "command": command})
    names = ["site", "a", "b", "transport", "tool", "role", "source"]
    median = Gauge(f"{PREFIX}_link_latency_median_microseconds", "median one-way latency of a link",
                   names, registry=registry)
    p99 = Gauge(f"{PREFIX}_link_latency_p99_microseconds", "99th percentile one-way latency of a link",
                names, registry=registry)
    bandwidth = Gauge(f"{PREFIX}_link_bandwidth_gbps", "measured bandwidth of a link, Gb/s", names,
                      registry=registry)
    verdict = Gauge(f"{PREFIX}_test_result_status", f"verdict of one test result ({_MAPPING})",
                    ["site", "a", "b", "kind", "transport", "tool"], registry=registry)
    for result in document.get("results") or []:
        pair = result.get("pair") or ["", ""]
        labels = {"site": site, "a": str(pair[0]), "b": str(pair[1]),
                  "transport": str(result.get("transport")), "tool": str(result.get("tool"))}
        row = {**labels, "role": str(result.get("role")), "source": str(result.get("source"))}
        stats = result.get("latency_us") or {}
        for gauge, value in ((median, stats.get("median")), (p99, stats.get("p99")),
                             (bandwidth, result.get("bandwidth_gbps"))):
            if (number := _number(value)) is not None:
                gauge.labels(**row).set(number)
        if result.get("role") == "verdict" and result.get("status"):
            verdict.labels(**labels, kind=str(result.get("kind"))).set(status_value(result["status"]))
    _decode_metrics(registry, site, document.get("decode"))
    deltas = list(counter_deltas(document.get("counters")))
    if deltas:
        gauge = Gauge(f"{PREFIX}_fabric_counter_delta", "growth of a fabric counter during the test",
                      ["site", "host", "device", "counter", "kind"], registry=registry)
        for host, device, name, kind, delta in deltas:
            gauge.labels(site=site, host=host, device=device, counter=name, kind=kind).set(delta)
    return registry


def _decode_metrics(registry: CollectorRegistry, site: str, decode: object) -> None:
    """`test decode`'s predictions: tok/s and the communication share, per transport and TP."""
    from prometheus_client import Gauge

    from strixwizard.charts import predictions

    rows = predictions(decode)
    if not rows:
        return
    model = decode.get("model") if isinstance(decode, dict) else None
    name = str((model.get("name") if isinstance(model, dict) else model) or "")
    names = ["site", "model", "transport", "tp", "batch", "source"]
    rate = Gauge(f"{PREFIX}_decode_predicted_tokens_per_second", "predicted decode tokens/s", names,
                 registry=registry)
    share = Gauge(f"{PREFIX}_decode_comm_share", "share of each token spent communicating (0-1)", names,
                  registry=registry)
    for row in rows:
        labels = {"site": site, "model": name, "transport": row.transport, "tp": str(row.tp),
                  "batch": "" if row.batch is None else str(row.batch), "source": row.source}
        rate.labels(**labels).set(row.tokens_per_s)
        if row.comm_share is not None:
            share.labels(**labels).set(row.comm_share)


def metrics_text(registry: CollectorRegistry) -> str:
    """The registry in the text exposition format, exactly as `write_to_textfile` writes it
    (with the name escaping it passes, which newer prometheus_client versions have)."""
    import inspect

    from prometheus_client import generate_latest, write_to_textfile

    escaping = inspect.signature(write_to_textfile).parameters.get("escaping")
    chosen = () if escaping is None else (escaping.default,)
    return generate_latest(registry, *chosen).decode("utf-8")
