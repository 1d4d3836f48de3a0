"""`site.yaml`: the nodes of a site, the fabric's wanted state and the thresholds.

Errors name the file and the line of the offending value, and stop the run
with exit status 2 before anything is probed.
"""

from __future__ import annotations

import math
import os
import re
import stat
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, TypeVar

import yaml

from strixwizard.become import BECOME_METHODS
from strixwizard.errors import UsageError


class SiteError(UsageError):
    pass


class FieldError(SiteError):
    """A value out of its range, raised where a record is built; the reader adds file:line."""

    def __init__(self, field_name: str, message: str) -> None:
        super().__init__(f"{field_name} {message}")
        self.field_name = field_name
        self.message = message


def _whole(owner: object, name: str, low: int, high: int) -> None:
    value = getattr(owner, name)
    if value is None:
        return
    if not isinstance(value, int) or isinstance(value, bool):
        raise FieldError(name, f"must be a whole number, not {value!r}")
    if not low <= value <= high:
        raise FieldError(name, f"must be between {low} and {high}, not {value}")


def _positive(owner: object, name: str, high: float = math.inf) -> None:
    """A finite number above 0 (and at most `high`): NaN, infinities and negatives are refused."""
    value = getattr(owner, name)
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        raise FieldError(name, f"must be a number, not {value!r}")
    if not math.isfinite(value) or value <= 0 or value > high:
        top = "" if math.isinf(high) else f" and at most {high:g}"
        raise FieldError(name, f"must be a finite number above 0{top}, not {value!r}")


def _text(owner: object, name: str, optional: bool = True) -> None:
    value = getattr(owner, name)
    if value is None and optional:
        return
    if not isinstance(value, str) or not value.strip() or "\x00" in value:
        raise FieldError(name, f"must be a non-empty string, not {value!r}")


#: Site and node names become file names (journals, captures, dry-run copies) and show up
#: in generated files: letters, digits, `.`, `_`, `-`; not `.` or `..`; at most 64.
NAME_MAX = 64
_NAME = re.compile(r"[A-Za-z0-9._-]+")


def name_problem(name: str) -> str | None:
    """Why `name` cannot name a site or a node, or None when it can."""
    if not name:
        return "is empty"
    if len(name) > NAME_MAX:
        return f"is {len(name)} characters long (at most {NAME_MAX})"
    if name in (".", ".."):
        return "cannot be `.` or `..`"
    if not _NAME.fullmatch(name):
        bad = "".join(sorted({c for c in name if not _NAME.fullmatch(c)}))
        return (f"holds {bad!r}: only letters, digits, `.`, `_` and `-` are allowed (the name "
                "becomes a file name)")
    return None


#: An IPv6 scope id (`fe80::1%eth0`): an interface name or index. Python's `ipaddress` takes
#: anything after `%`, newlines included; a node reporting `fe80::1%x\n  - name: ghost` must not
#: become a node of site.yaml.
_SCOPE = re.compile(r"[A-Za-z0-9_.-]{1,64}")
#: A DNS name or an SSH config alias: labels of letters, digits, `_` and `-`, joined by dots.
_LABEL = r"[A-Za-z0-9_][A-Za-z0-9_-]{0,62}"
_HOSTNAME = re.compile(rf"(?=.{{1,253}}\Z){_LABEL}(\.{_LABEL})*\.?")


def address_problem(value: str) -> str | None:
    """Why `value` is not an IP address (IPv4, or IPv6 with at most a plain scope id), or None."""
    import ipaddress

    address, _, scope = value.partition("%")
    try:
        parsed = ipaddress.ip_address(address)
    except ValueError:
        return "is not an IP address"
    if "%" in value and (parsed.version != 6 or not _SCOPE.fullmatch(scope)):
        return "has a scope id that is not an interface name or number"
    return None


def host_problem(value: str) -> str | None:
    """Why `value` cannot be a node's management host (`local`, an IP address, a host name), or
    None."""
    if value == "local" or address_problem(value) is None or _HOSTNAME.fullmatch(value):
        return None
    return "is not `local`, an IP address or a host name (letters, digits, `.`, `_`, `-`)"


def bin_dir_problem(value: str) -> str | None:
    """Why `value` cannot be a folder of programs on the nodes (`llama_bin_dir:`), or None: an
    absolute path on one line (it becomes an argv value and a line of a systemd unit)."""
    if any(ord(c) < 32 or ord(c) == 127 for c in value):
        return "holds a line break or another control character"
    if not value.startswith("/"):
        return "is not an absolute path (it is a folder on the nodes: start it with /)"
    return None


def node_problem(node: NodeSpec) -> str | None:
    """What is wrong with a node's host or fabric address (a site file's rule, a bundle's too)."""
    if node.host is not None and (problem := host_problem(node.host)) is not None:
        return f"host {node.host!r} {problem}"
    if node.fabric_address is not None and (problem := address_problem(node.fabric_address)) is not None:
        return f"fabric_address {node.fabric_address!r} {problem}"
    if node.become is not None and (node.is_local or node.snapshot is not None):
        what = "`host: local` runs as the user who runs strixwizard" if node.is_local \
            else "a snapshot is only read"
        return f"become: {node.become} is for a node reached over SSH ({what})"
    return None


#: The IPv4 minimum MTU to the largest jumbo frame the fabric's switches and NICs take.
MTU_MIN, MTU_MAX = 68, 9216
#: `dcb apptrust` orders the lossless fix can set.
TRUST_ORDERS = ("dscp", "pcp")
MAX_PARALLEL = 256
MAX_SECONDS = 86400.0
#: A site file or inventory larger than this is not one (read at most this much).
MAX_FILE_BYTES = 4 * 1024 * 1024
#: Values a YAML document may hold once its aliases are expanded (billion laughs).
MAX_YAML_VALUES = 100_000
#: The YAML tags a site file or inventory may carry (the YAML 1.1 core schema).
STANDARD_TAGS = frozenset(
    f"tag:yaml.org,2002:{name}"
    for name in ("str", "int", "float", "bool", "null", "map", "seq", "timestamp", "binary",
                 "set", "omap", "pairs", "merge", "value")
)


@dataclass(frozen=True)
class NodeSpec:
    """A node of a site file: how to reach it, and its fabric address."""

    name: str
    host: str | None = None  # SSH address, or "local" for this machine
    user: str = "root"
    port: int = 22
    key: str | None = None
    fabric_address: str | None = None
    snapshot: str | None = None  # replay a captured node instead of probing it
    #: `sudo`: the login user is not root and runs every remote command through `sudo -n`
    become: str | None = None

    def __post_init__(self) -> None:
        _whole(self, "port", 1, 65535)
        _text(self, "user", optional=False)
        for name in ("host", "key", "fabric_address", "snapshot"):
            _text(self, name)
        if self.become is not None and self.become not in BECOME_METHODS:
            raise FieldError("become", f"must be {' or '.join(BECOME_METHODS)} (or left out: the "
                             f"login user is root), not {self.become!r}")

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

    @property
    def roce_dscp(self) -> int:
        """The DSCP RoCE traffic carries for the PFC priority (8 * priority + 2: 26 for 3,
        the value NVIDIA's and Intel's RoCE guides map to priority 3)."""
        return 8 * self.pfc_priority + 2

    def __post_init__(self) -> None:
        _whole(self, "mtu", MTU_MIN, MTU_MAX)
        _whole(self, "pfc_priority", 0, 7)
        _whole(self, "roce_version", 1, 2)
        if self.trust not in TRUST_ORDERS:
            raise FieldError("trust", f"must be one of {', '.join(TRUST_ORDERS)}, not {self.trust!r}")


@dataclass(frozen=True)
class Thresholds:
    """The site file's pass marks for latency, bandwidth and GTT size."""

    rdma_latency_us: float = 8.0
    tcp_latency_us: float = 150.0
    bandwidth_fraction: float = 0.8  # of the link's rate
    gtt_min_fraction: float = 0.75  # of MemTotal

    def __post_init__(self) -> None:
        _positive(self, "rdma_latency_us")
        _positive(self, "tcp_latency_us")
        _positive(self, "bandwidth_fraction", 1.0)
        _positive(self, "gtt_min_fraction", 1.0)


@dataclass(frozen=True)
class SshSettings:
    """The site file's SSH settings: known hosts, timeouts, parallelism."""

    known_hosts: str = "~/.ssh/known_hosts"
    connect_timeout: float = 5.0  # seconds to reach a node's sshd
    deadline: float = 60.0  # seconds for a node's whole collection
    parallel: int | None = None  # nodes collected at once; None: sized for the head's CPUs

    def __post_init__(self) -> None:
        _text(self, "known_hosts", optional=False)
        _positive(self, "connect_timeout", MAX_SECONDS)
        _positive(self, "deadline", MAX_SECONDS)
        _whole(self, "parallel", 1, MAX_PARALLEL)


@dataclass(frozen=True)
class Site:
    """A site: its nodes, its fabric, its thresholds and its SSH settings."""

    name: str
    nodes: tuple[NodeSpec, ...] = ()
    fabric: Fabric = field(default_factory=Fabric)
    thresholds: Thresholds = field(default_factory=Thresholds)
    ssh: SshSettings = field(default_factory=SshSettings)
    path: Path | None = None
    #: rxe/siw count as the fabric's RDMA (software RDMA: tests the setup and the tool, not
    #: production speed); `allow_soft_rdma: true` in the file or `--allow-soft-rdma`
    allow_soft_rdma: bool = False
    #: the stack the site runs (a name of STACKS; "": not said, every check runs): `stack:` in
    #: the file, `doctor --stack`; doctor then runs the checks that stack depends on
    stack: str = ""
    #: the folder of the nodes' llama.cpp programs (`llama_bin_dir:` in the file): the default
    #: of every `--llama-bin-dir` (doctor, deploy --stack llama-rpc and its --build, test decode
    #: --calibrate); the flag wins when given. None: not said (root's PATH and the usual folders)
    llama_bin_dir: str | None = None

    @property
    def base_dir(self) -> Path:
        return self.path.parent if self.path else Path.cwd()

    def resolve(self, relative: str) -> Path:
        """A path from the site file, relative to the file's own folder."""
        path = Path(relative).expanduser()
        return path if path.is_absolute() else self.base_dir / path


DEFAULT_SITE = Site(name="local")

#: The stacks a site runs, by the name `stack:`, `doctor --stack` and `deploy --stack` use, and
#: what a user calls each (the deploy stacks' packages take their NAME from here).
RAY, LLAMA_RPC, DS4 = "ray", "llama-rpc", "ds4"
STACKS = {RAY: "vLLM on Ray (RCCL)", LLAMA_RPC: "llama.cpp RPC", DS4: "ds4"}

T = TypeVar("T")
TOP_LEVEL_KEYS = ("site", "nodes", "fabric", "thresholds", "ssh", "allow_soft_rdma", "stack",
                  "llama_bin_dir")
_TYPE_NAMES: dict[object, str] = {int: "whole number", float: "number", str: "string"}


class YamlReader:
    """Walks a composed YAML tree, so every error can point at a line."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.constructor = yaml.SafeLoader("")

    def error(self, node: yaml.Node | None, message: str) -> SiteError:
        line = f":{node.start_mark.line + 1}" if node is not None else ""
        return SiteError(f"{self.source}{line}: {message}")

    def construct(self, node: yaml.ScalarNode, what: str) -> Any:
        """The Python value of a scalar of a standard tag (`check_tree` has refused the rest)."""
        try:
            return self.constructor.construct_object(node)
        except (yaml.YAMLError, ValueError, OverflowError) as error:
            raise self.error(node, f"{what}: not a valid value ({error})") from None

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
        value = self.construct(node, what)
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
        value_nodes: dict[str, yaml.Node] = {}
        for key, (key_node, value_node) in self.mapping(node, what).items():
            spec = known.get(key.replace("-", "_"))
            if spec is None or spec.name == "path":
                allowed = ", ".join(n for n in known if n != "path")
                raise self.error(key_node, f"{what}: unknown key {key!r} (known: {allowed})")
            kind = kinds[str(spec.type)]
            values[spec.name] = self.scalar(value_node, kind, f"{what}.{key}")
            value_nodes[spec.name] = value_node
        try:
            return cls(**values)
        except FieldError as error:
            raise self.error(value_nodes.get(error.field_name, node),
                             f"{what}.{error.field_name} {error.message}") from None
        except TypeError as error:  # a required field is missing
            missing = str(error).rsplit(":", 1)[-1].strip()
            raise self.error(node, f"{what} is missing {missing}") from None


def check_tree(root: yaml.Node, source: str) -> None:
    """Refuse non-standard tags (`!custom`, `!!python/object`), an alias inside its own
    anchor, and documents whose aliases expand to more than MAX_YAML_VALUES values.
    Iterative, and each distinct node is sized once: no recursion, no exponential walk."""
    sizes: dict[int, int] = {}
    on_path: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        key = id(node)
        if children_done:
            on_path.discard(key)
            total = 1 + sum(sizes[id(child)] for child in _children(node))
            if total > MAX_YAML_VALUES:
                raise SiteError(f"{source}:{node.start_mark.line + 1}: holds more than "
                                f"{MAX_YAML_VALUES} values once YAML aliases are expanded")
            sizes[key] = total
            continue
        if key in sizes:
            continue
        if key in on_path:
            raise SiteError(f"{source}:{node.start_mark.line + 1}: a YAML alias refers to the "
                            "value that contains it")
        if node.tag not in STANDARD_TAGS:
            raise SiteError(f"{source}:{node.start_mark.line + 1}: YAML tag {node.tag!r} is not "
                            "allowed (only plain values, lists and mappings)")
        on_path.add(key)
        stack.append((node, True))
        stack.extend((child, False) for child in _children(node))


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    return []


def compose_yaml(text: str, source: str) -> yaml.Node | None:
    """The YAML node tree (with line marks), or a SiteError naming file and line."""
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except RecursionError:
        raise SiteError(f"{source}: not valid YAML: nested too deeply") from None
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        line = f":{mark.line + 1}" if mark else ""
        context = ""
        if error.context and error.context_mark and error.context_mark is not mark:
            context = f" ({error.context} started on line {error.context_mark.line + 1})"
        raise SiteError(f"{source}{line}: not valid YAML: {error.problem}{context}") from None
    except yaml.YAMLError as error:
        raise SiteError(f"{source}: not valid YAML: {error}") from None
    if root is not None:
        check_tree(root, source)
    return root


def read_text_file(path: Path, what: str) -> str:
    """A small regular UTF-8 file's text; a device, FIFO or huge file is refused unread."""
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise
    except OSError as error:
        raise SiteError(f"{path}: cannot read the {what} ({error.strerror})") from None
    with os.fdopen(descriptor, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise SiteError(f"{path}: the {what} is not a regular file")
        data = handle.read(MAX_FILE_BYTES + 1)
    if len(data) > MAX_FILE_BYTES:
        raise SiteError(f"{path}: the {what} is larger than {MAX_FILE_BYTES // (1024 * 1024)} MiB")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise SiteError(f"{path}: cannot read the {what} (not UTF-8: {error.reason} at byte "
                        f"{error.start})") from None


def _refuse_become_flag(reader: YamlReader, item: yaml.Node, what: str) -> None:
    """`become: true` is Ansible's spelling: say which word the site file takes."""
    if not isinstance(item, yaml.MappingNode):
        return
    for key_node, value_node in item.value:
        if getattr(key_node, "value", None) == "become" and value_node.tag == "tag:yaml.org,2002:bool":
            raise reader.error(value_node, f"{what}.become must name how to become root: "
                               f"`become: {BECOME_METHODS[0]}`, not {value_node.value!r}")


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
    if (problem := name_problem(name)) is not None:
        where = top["site"][1] if "site" in top else root
        taken = "" if "site" in top else " (taken from the file name: set `site: NAME`)"
        raise reader.error(where, f"site name {name!r} {problem}{taken}")
    nodes: list[NodeSpec] = []
    if "nodes" not in top and require_nodes:
        raise reader.error(root, "no `nodes:` list")
    nodes_node = top["nodes"][1] if "nodes" in top else yaml.SequenceNode("", [])
    if not isinstance(nodes_node, yaml.SequenceNode) or (require_nodes and not nodes_node.value):
        raise reader.error(nodes_node, "`nodes:` must be a non-empty list of nodes")
    seen: dict[str, int] = {}
    for index, item in enumerate(nodes_node.value):
        _refuse_become_flag(reader, item, f"nodes[{index}]")
        node = reader.record(item, NodeSpec, f"nodes[{index}]")
        if (problem := name_problem(node.name)) is not None:
            name_node = reader.mapping(item, f"nodes[{index}]")["name"][1]
            raise reader.error(name_node, f"node name {node.name!r} {problem}")
        if (problem := node_problem(node)) is not None:
            raise reader.error(item, f"node {node.name!r}: {problem}")
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
    stack = reader.scalar(top["stack"][1], str, "stack") if "stack" in top else ""
    if "stack" in top and stack not in STACKS:
        raise reader.error(top["stack"][1], f"stack {stack!r} is not one of {', '.join(STACKS)}")
    bin_dir = None
    if "llama_bin_dir" in top:
        bin_dir = reader.scalar(top["llama_bin_dir"][1], str, "llama_bin_dir")
        if (problem := bin_dir_problem(bin_dir)) is not None:
            raise reader.error(top["llama_bin_dir"][1], f"llama_bin_dir {bin_dir!r} {problem}")
    return Site(name=name, nodes=tuple(nodes), fabric=fabric, thresholds=thresholds, ssh=ssh,
                path=path, allow_soft_rdma=allow_soft_rdma, stack=stack, llama_bin_dir=bin_dir)


def load_site(path: Path, require_nodes: bool = True) -> Site:
    try:
        text = read_text_file(path, "site file")
    except FileNotFoundError:
        raise SiteError(f"{path}: no such site file (create one with `strixwizard init`)") from None
    return parse_site(text, str(path), path.resolve(), require_nodes)
