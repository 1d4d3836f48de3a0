"""Measurement kinds: what `strixwizard test KIND` can measure, each declared once.

Each module of this package declares one `KIND = MeasurementKind(...)`: its name and help, its
command-line options as data, how it pairs the nodes, its runner on a site's nodes, its demo
(recordings and loopback), what it adds to the result document and the text summary, whether
the history stores it, and its place in the wizard's Test step. `registry()` finds the modules
(adding a kind is adding a module: no list to edit); the runner, the services, the command line
and the wizard ask it and know no kind by name.

A kind module stays cheap to import (the command line reads every kind's options to build
`strixwizard test --help`): what it runs is imported inside its functions.
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    from strixwizard.discovery import Discovery
    from strixwizard.live.demo import SitePaths
    from strixwizard.live.hosts import Host
    from strixwizard.live.plan import PairPlan
    from strixwizard.live.report import MeasurementReport
    from strixwizard.live.results import Measurement
    from strixwizard.live.settings import MatrixTiming, MeasurementSettings
    from strixwizard.node.cancel import Cancel

Pair = tuple[str, str]


@dataclass(frozen=True)
class Option:
    """A command-line option, as data: argparse's flags and keywords (`help`, `type`,
    `default`, `metavar`, `action`, `choices`). `elsewhere`: the usage error when a kind that
    does not declare it is given anything but its default (`{flag}`, `{kind}` and `{kinds}`,
    the kinds that declare it, are filled in); None: other kinds accept and ignore it."""

    flags: tuple[str, ...]
    settings: Mapping[str, Any]
    elsewhere: str | None = None

    @property
    def dest(self) -> str:
        return self.flags[0].lstrip("-").replace("-", "_")

    @property
    def default(self) -> Any:
        if "default" in self.settings:
            return self.settings["default"]
        return False if self.settings.get("action") == "store_true" else None

    def add_to(self, parser: argparse.ArgumentParser | argparse._ArgumentGroup,
               shown: bool = True, defaults: bool = True) -> None:
        """`shown`: listed by --help; `defaults`: set the default (a kind's own parser does
        not, so an option given before the kind is kept)."""
        settings = dict(self.settings)
        if not shown:
            settings["help"] = argparse.SUPPRESS
        if not defaults:
            settings["default"] = argparse.SUPPRESS
        parser.add_argument(*self.flags, **settings)


@dataclass(frozen=True)
class Job:
    """What a kind's runner is given: the nodes taking part (sessions tracked by the run's
    cancel), the plan of every pair it measures, and the run's settings."""

    hosts: dict[str, Host]
    plans: dict[Pair, PairPlan]
    nodes: Sequence[str]
    settings: MeasurementSettings
    addresses: dict[str, str]
    cancel: Cancel
    timing: MatrixTiming | None = None
    found: Discovery | None = None  # the discovery the run was planned from (its topology)

    def in_threads(self, jobs: Sequence[Callable[[], Iterator[Measurement]]]) -> Iterator[Measurement]:
        """Run `jobs` at once, each in a thread; their results in the order they arrive."""
        from strixwizard.live.streams import in_threads

        return in_threads(jobs, self.cancel)


@dataclass(frozen=True)
class DemoJob:
    """What a kind's demo is given: the demo nodes taking part, the pairs, the run's settings,
    and the RDMA path of each pair as the demo's snapshots show it (read when asked: a kind
    that runs on loopback never needs it)."""

    nodes: list[str]
    pairs: list[Pair]
    settings: MeasurementSettings
    cancel: Cancel
    paths: Callable[[], SitePaths]


@dataclass(frozen=True)
class Finished:
    """What a kind may add to the result document once its stream has ended."""

    nodes: list[str]
    settings: MeasurementSettings
    timing: MatrixTiming
    demo: bool
    seconds: float  # how long the stream ran
    site_nodes: int | None = None  # the site's node count (what a prediction may use)


PairRule = Callable[[Sequence[str], "Pair | None", bool], tuple[list[str], list[Pair]]]


def one_pair(names: Sequence[str], pair: Pair | None, all_pairs: bool = False
             ) -> tuple[list[str], list[Pair]]:
    """The pair asked for, else the site's first two nodes."""
    if pair is None:
        from strixwizard.errors import UsageError

        if len(names) < 2:
            raise UsageError("a live test needs two nodes; the site has " + (names[0] if names else "none"))
        pair = (names[0], names[1])
    return list(pair), [pair]


def every_pair(names: Sequence[str], pair: Pair | None, all_pairs: bool = False
               ) -> tuple[list[str], list[Pair]]:
    """Every pair of the nodes (of the pair asked for, else of the site), in rounds of
    disjoint pairs."""
    from strixwizard.live.schedule import rounds

    chosen = list(pair) if pair else list(names)
    return chosen, [p for r in rounds(chosen) for p in r]


def chain(names: Sequence[str], pair: Pair | None, all_pairs: bool = False
          ) -> tuple[list[str], list[Pair]]:
    """All the nodes (or the pair asked for) as one group: each node with the next."""
    chosen = list(pair) if pair else list(names)
    return chosen, [(chosen[i], chosen[i + 1]) for i in range(len(chosen) - 1)]


@dataclass(frozen=True)
class WizardPanel:
    """A kind's part of the wizard's Test step, as data: the widget (`module:Class`) that
    shows its results, its title, and the key that starts it there (None: the step's run)."""

    widget: str
    title: str
    key: str | None = None


@dataclass(frozen=True)
class MeasurementKind:
    name: str
    #: One sentence for `strixwizard test --help`: what it measures and how it is judged
    help: str
    #: Pairs the nodes: (the nodes taking part, the pairs measured, in order) from the site's
    #: node names, the pair asked for (--pair) and --all-pairs
    pairs: PairRule
    #: Measures on a site's nodes, streaming results as they come
    run: Callable[[Job], Iterator[Measurement]]
    #: The demo: recordings replayed, TCP measured on this machine's loopback
    demo: Callable[[DemoJob], Iterator[Measurement]]
    #: Its own command-line options (shared ones are the command's)
    options: tuple[Option, ...] = ()
    #: Its place in `strixwizard test --help` and the choices
    order: int = 100
    #: The result kind of the error a node that cannot take part gives
    reports_as: str | None = None
    #: The kind's options become its settings (UsageError on a bad one); `progress` says how
    #: far a long run is, where the front door shows it (None: it does not)
    configure: Callable[[argparse.Namespace, MeasurementSettings, Callable[[Any], None] | None],
                        None] | None = None
    #: Adds its part to the result document when the stream has ended
    finish: Callable[[MeasurementReport, Finished], None] | None = None
    #: Its section of the text summary (after the like-for-like comparison)
    summary: Callable[[MeasurementReport, TextIO], None] | None = None
    #: The fabric counters are read around its run
    counters: bool = True
    #: The history stores its figures (compared with the last good run)
    history: bool = True
    #: Its part of the wizard's Test step
    panel: WizardPanel | None = None
    #: Its place in the Test step's run (r), None: not part of it
    wizard_run: int | None = None

    @property
    def result_kind(self) -> str:
        return self.reports_as or self.name


@cache
def registry() -> dict[str, MeasurementKind]:
    """Every kind declared in this package, by name, in their declared order."""
    found = []
    for info in pkgutil.iter_modules(__path__):
        module = importlib.import_module(f"{__name__}.{info.name}")
        kind = getattr(module, "KIND", None)
        if isinstance(kind, MeasurementKind):
            found.append(kind)
    return {k.name: k for k in sorted(found, key=lambda k: (k.order, k.name))}


def names() -> tuple[str, ...]:
    return tuple(registry())


def kind_of(name: str) -> MeasurementKind:
    return registry()[name]


def options() -> list[Option]:
    """Every kind's options, each once (kinds may share one), in the kinds' order."""
    seen: dict[tuple[str, ...], Option] = {}
    for kind in registry().values():
        for option in kind.options:
            seen.setdefault(option.flags, option)
    return list(seen.values())


def declaring(option: Option) -> list[str]:
    return [k.name for k in registry().values() if option in k.options]


def spoken(words: Sequence[str]) -> str:
    """"a", "a and b", "a, b and c"."""
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


def refuse_foreign_options(kind: MeasurementKind, values: argparse.Namespace) -> None:
    """A usage error for an option of other kinds that this kind refuses (its `elsewhere`)."""
    from strixwizard.errors import UsageError

    for option in options():
        if option in kind.options or option.elsewhere is None:
            continue
        if getattr(values, option.dest, option.default) != option.default:
            raise UsageError(option.elsewhere.format(flag=option.flags[0], kind=kind.name,
                                                     kinds=spoken(declaring(option))))
