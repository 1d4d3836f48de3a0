"""`site.yaml`: the nodes of a site, the fabric's wanted state and the thresholds.

Errors name the file and the line of the offending value, and stop the run
with exit status 2 before anything is probed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, TypeVar

import yaml

from strixwizard.errors import UsageError


class SiteError(UsageError):
    pass


@dataclass(frozen=True)
class NodeSpec:
    name: str
    host: str | None = None  # SSH address, or "local" for this machine
    user: str = "root"
    port: int = 22
    key: str | None = None
    fabric_address: str | None = None
    snapshot: str | None = None  # replay a captured node instead of probing it

    @property
    def is_local(self) -> bool:
        return self.host == "local"


@dataclass(frozen=True)
class Fabric:
    """The state every fabric link should reach."""

    mtu: int = 9000
    pfc_priority: int = 3
    trust: str = "dscp"
    roce_version: int = 2


@dataclass(frozen=True)
class Thresholds:
    rdma_latency_us: float = 8.0
    tcp_latency_us: float = 150.0
    bandwidth_fraction: float = 0.8  # of the link's rate
    gtt_min_fraction: float = 0.75  # of MemTotal


@dataclass(frozen=True)
class SshSettings:
    known_hosts: str = "~/.ssh/known_hosts"
    connect_timeout: float = 5.0  # seconds to reach a node's sshd
    deadline: float = 60.0  # seconds for a node's whole collection


@dataclass(frozen=True)
class Site:
    name: str
    nodes: tuple[NodeSpec, ...] = ()
    fabric: Fabric = field(default_factory=Fabric)
    thresholds: Thresholds = field(default_factory=Thresholds)
    ssh: SshSettings = field(default_factory=SshSettings)
    path: Path | None = None
    #: rxe/siw count as the fabric's RDMA (software RDMA: tests the setup and the tool, not
    #: production speed); `allow_soft_rdma: true` in the file or `--allow-soft-rdma`
    allow_soft_rdma: bool = False

    @property
    def base_dir(self) -> Path:
        return self.path.parent if self.path else Path.cwd()

    def resolve(self, relative: str) -> Path:
        """A path from the site file, relative to the file's own folder."""
        path = Path(relative).expanduser()
        return path if path.is_absolute() else self.base_dir / path


DEFAULT_SITE = Site(name="local")

T = TypeVar("T")
TOP_LEVEL_KEYS = ("site", "nodes", "fabric", "thresholds", "ssh", "allow_soft_rdma")
_TYPE_NAMES: dict[object, str] = {int: "whole number", float: "number", str: "string"}


class YamlReader:
    """Walks a composed YAML tree, so every error can point at a line."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.constructor = yaml.SafeLoader("")

    def error(self, node: yaml.Node | None, message: str) -> SiteError:
        line = f":{node.start_mark.line + 1}" if node is not None else ""
        return SiteError(f"{self.source}{line}: {message}")

    def mapping(self, node: yaml.Node, what: str) -> dict[str, tuple[yaml.Node, yaml.Node]]:
        if not isinstance(node, yaml.MappingNode):
            raise self.error(node, f"{what} must be a mapping of keys to values")
        out: dict[str, tuple[yaml.Node, yaml.Node]] = {}
        for key_node, value_node in node.value:
            key = key_node.value if isinstance(key_node, yaml.ScalarNode) else None
            if not isinstance(key, str):
                raise self.error(key_node, f"{what}: keys must be plain names")
            if key in out:
                raise self.error(key_node, f"{what}: key {key!r} appears twice")
            out[key] = (key_node, value_node)
        return out

    def scalar(self, node: yaml.Node, kind: Callable[[Any], T], what: str) -> T:
        if not isinstance(node, yaml.ScalarNode):
            raise self.error(node, f"{what} must be a single value")
        value = self.constructor.construct_object(node)
        type_name = _TYPE_NAMES.get(kind, getattr(kind, "__name__", str(kind)))
        if kind is float and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        if kind is str and isinstance(value, (int, float)) and not isinstance(value, bool):
            value = str(value)
        if not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool):  # type: ignore[arg-type]
            raise self.error(node, f"{what} must be a {type_name}, not {value!r}")
        return value  # type: ignore[no-any-return]

    def record(self, node: yaml.Node, cls: type[T], what: str) -> T:
        """Build dataclass `cls` from a mapping, checking names and types."""
        known = {f.name: f for f in fields(cls)}  # type: ignore[arg-type]
        kinds = {"int": int, "float": float, "str": str, "str | None": str, "int | None": int}
        values: dict[str, Any] = {}
        for key, (key_node, value_node) in self.mapping(node, what).items():
            spec = known.get(key.replace("-", "_"))
            if spec is None or spec.name == "path":
                allowed = ", ".join(n for n in known if n != "path")
                raise self.error(key_node, f"{what}: unknown key {key!r} (known: {allowed})")
            kind = kinds[str(spec.type)]
            values[spec.name] = self.scalar(value_node, kind, f"{what}.{key}")
        try:
            return cls(**values)
        except TypeError as error:  # a required field is missing
            missing = str(error).rsplit(":", 1)[-1].strip()
            raise self.error(node, f"{what} is missing {missing}") from None


def compose_yaml(text: str, source: str) -> yaml.Node | None:
    """The YAML node tree (with line marks), or a SiteError naming file and line."""
    try:
        return yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        line = f":{mark.line + 1}" if mark else ""
        context = ""
        if error.context and error.context_mark and error.context_mark is not mark:
            context = f" ({error.context} started on line {error.context_mark.line + 1})"
        raise SiteError(f"{source}{line}: not valid YAML: {error.problem}{context}") from None
    except yaml.YAMLError as error:
        raise SiteError(f"{source}: not valid YAML: {error}") from None


def parse_site(text: str, source: str, path: Path | None = None, require_nodes: bool = True) -> Site:
    """Parse a site file; `require_nodes=False` when an inventory supplies the nodes."""
    reader = YamlReader(source)
    root = compose_yaml(text, source)
    if root is None:
        raise SiteError(f"{source}: the file is empty; expected `site:` and `nodes:`")
    top = reader.mapping(root, "the site file")
    for key, (key_node, _) in top.items():
        if key not in TOP_LEVEL_KEYS:
            raise reader.error(key_node, f"unknown key {key!r} (known: {', '.join(TOP_LEVEL_KEYS)})")
    name = reader.scalar(top["site"][1], str, "site") if "site" in top else Path(source).stem
    nodes: list[NodeSpec] = []
    if "nodes" not in top and require_nodes:
        raise reader.error(root, "no `nodes:` list")
    nodes_node = top["nodes"][1] if "nodes" in top else yaml.SequenceNode("", [])
    if not isinstance(nodes_node, yaml.SequenceNode) or (require_nodes and not nodes_node.value):
        raise reader.error(nodes_node, "`nodes:` must be a non-empty list of nodes")
    seen: dict[str, int] = {}
    for index, item in enumerate(nodes_node.value):
        node = reader.record(item, NodeSpec, f"nodes[{index}]")
        if node.host is None and node.snapshot is None:
            raise reader.error(item, f"node {node.name!r} needs `host:` (or `local`) or `snapshot:`")
        if node.name in seen:
            raise reader.error(item, f"node name {node.name!r} is already used on line {seen[node.name]}")
        seen[node.name] = item.start_mark.line + 1
        nodes.append(node)
    fabric = reader.record(top["fabric"][1], Fabric, "fabric") if "fabric" in top else Fabric()
    thresholds = (
        reader.record(top["thresholds"][1], Thresholds, "thresholds")
        if "thresholds" in top
        else Thresholds()
    )
    ssh = reader.record(top["ssh"][1], SshSettings, "ssh") if "ssh" in top else SshSettings()
    soft = top.get("allow_soft_rdma")
    allow_soft_rdma = reader.scalar(soft[1], bool, "allow_soft_rdma") if soft else False
    return Site(name=name, nodes=tuple(nodes), fabric=fabric, thresholds=thresholds, ssh=ssh,
                path=path, allow_soft_rdma=allow_soft_rdma)


def load_site(path: Path, require_nodes: bool = True) -> Site:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise SiteError(f"{path}: no such site file (create one with `strixwizard init`)") from None
    except (OSError, UnicodeDecodeError) as error:
        raise SiteError(f"{path}: cannot read the site file ({error})") from None
    return parse_site(text, str(path), path.resolve(), require_nodes)
