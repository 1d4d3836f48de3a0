"""The typed ops channel (strixwizard/node/channel.py): one request type per op, the wire format
an older node copy reads unchanged, and one place where a failed answer becomes an error."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import get_args

import pytest

from strixwizard.node.channel import (
    REQUESTS,
    Completed,
    Delete,
    Done,
    Exists,
    GetMtu,
    Lock,
    Locked,
    MakeDir,
    OpsChannel,
    Ping,
    ReadFile,
    RemoveDir,
    ReplaceFile,
    Run,
    SetMtu,
    Unlock,
    Value,
    WriteAttribute,
    answer_of,
    here,
)
from strixwizard.node.errors import NodeError, NodeLockHeld, OpRefused, Unreachable
from strixwizard.node.local import LocalSession
from strixwizard.onnode import ops

PRODUCT = Path(__file__).resolve().parent.parent / "strixwizard"


def test_every_op_the_node_answers_has_one_request_type() -> None:
    names = [request.op for request in REQUESTS]
    assert sorted(names) == sorted(get_args(ops.Op))


@pytest.mark.parametrize(("request_", "wire"), [
    (ReadFile("/etc/hostname"), {"op": "read", "path": "/etc/hostname"}),
    (Exists("/sys/x"), {"op": "exists", "path": "/sys/x"}),
    (WriteAttribute("/sys/x", "1"), {"op": "write", "path": "/sys/x", "data": "1"}),
    (ReplaceFile("/etc/a", "t", 0o600), {"op": "replace", "path": "/etc/a", "data": "t", "mode": 0o600}),
    (Delete("/etc/a"), {"op": "delete", "path": "/etc/a"}),
    (MakeDir("/d"), {"op": "mkdir", "path": "/d"}),
    (RemoveDir("/d"), {"op": "rmdir", "path": "/d"}),
    (Run(("ip", "-j", "link")), {"op": "run", "argv": ["ip", "-j", "link"]}),
    (GetMtu("eth0"), {"op": "mtu_get", "ifname": "eth0"}),
    (SetMtu("eth0", 9000), {"op": "mtu_set", "ifname": "eth0", "mtu": 9000}),
    (Lock("/l", {"pid": 1}), {"op": "lock", "path": "/l", "holder": {"pid": 1}, "take_over": False}),
    (Unlock("/l"), {"op": "unlock", "path": "/l"}),
    (Ping(), {"op": "ping"}),
])
def test_the_wire_format_is_the_one_older_nodes_read(request_: object, wire: dict[str, object]) -> None:
    assert request_.wire() == wire  # type: ignore[attr-defined]


def test_a_failed_answer_is_an_error_of_the_node_seam() -> None:
    with pytest.raises(OpRefused, match=r"^/sys/x: Permission denied$") as refused:
        answer_of(WriteAttribute("/sys/x", "1"), {"ok": False, "error": "/sys/x: Permission denied"})
    assert isinstance(refused.value, NodeError) and not isinstance(refused.value, Unreachable)
    with pytest.raises(OpRefused, match="the node refused write"):
        answer_of(WriteAttribute("/sys/x", "1"), {"error": None})  # no "ok": not a success
    with pytest.raises(NodeLockHeld) as held:
        answer_of(Lock("/l"), {"ok": False, "error": "/l is locked", "holder": '{"pid": 7}'})
    assert held.value.holder == '{"pid": 7}' and str(held.value) == "/l is locked"


def test_answers_are_typed() -> None:
    assert answer_of(Run(("true",)), {"ok": True, "rc": 0, "stdout": "a", "stderr": ""}) == \
        Completed(0, "a", "")
    assert answer_of(ReadFile("/x"), {"ok": True, "value": None}) == Value(None)
    assert answer_of(GetMtu("eth0"), {"ok": True, "value": "1500"}) == Value("1500")
    assert answer_of(Delete("/x"), {"ok": True}) == Done()
    assert answer_of(Lock("/l"), {"ok": True, "previous": ""}) == Locked("")


def test_the_local_channel_does_each_op(tmp_path: Path) -> None:
    channel = LocalSession().ops()
    assert isinstance(channel, OpsChannel)
    path = str(tmp_path / "a" / "file")
    channel.send(ReplaceFile(path, "text\n", 0o600))
    assert channel.send(ReadFile(path)) == Value("text\n")
    assert channel.send(Exists(path)) == Value("present")
    assert (tmp_path / "a" / "file").stat().st_mode & 0o777 == 0o600
    channel.send(Delete(path))
    assert channel.send(ReadFile(path)) == Value(None)
    channel.send(MakeDir(str(tmp_path / "d")))
    with pytest.raises(OpRefused, match="File exists"):
        channel.send(MakeDir(str(tmp_path / "d")))
    channel.send(RemoveDir(str(tmp_path / "d")))
    done = channel.send(Run(("sh", "-c", "echo out; echo err >&2; exit 3")))
    assert done == Completed(3, "out\n", "err\n")
    assert channel.send(Run(("strixwizard-no-such-tool",))).rc == 127
    with pytest.raises(OpRefused, match="no interface"):
        channel.send(GetMtu("strixwizard-none0"))
    channel.close()


def test_a_held_lock_names_its_holder(tmp_path: Path) -> None:
    path = str(tmp_path / "site.lock")
    here(Lock(path, {"pid": 1, "command": "fix"}))
    try:
        # a second holder in this process: `ops` keeps one fd per path, so lock from a child
        import subprocess
        import sys

        code = ("import json, sys\nfrom strixwizard.node.channel import Lock, here\n"
                "from strixwizard.node.errors import NodeLockHeld\n"
                "try:\n    here(Lock(sys.argv[1], {'pid': 2}))\n"
                "except NodeLockHeld as held:\n    print(json.loads(held.holder)['command'])\n")
        done = subprocess.run([sys.executable, "-c", code, path], capture_output=True, text=True,
                              check=True, timeout=60)
        assert done.stdout.strip() == "fix"
    finally:
        here(Unlock(path))


def _reads_ok(tree: ast.AST) -> list[int]:
    """Lines that look at an answer's "ok" by hand: `x.get("ok")` or `x["ok"]`."""
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr == "get" and node.args \
                and isinstance(node.args[0], ast.Constant) and node.args[0].value == "ok":
            lines.append(node.lineno)
        if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant) \
                and node.slice.value == "ok":
            lines.append(node.lineno)
    return lines


def test_only_the_channel_looks_at_an_answer_s_ok() -> None:
    found = [f"{path.relative_to(PRODUCT)}:{line}" for path in sorted(PRODUCT.rglob("*.py"))
             if path.parent.name != "onnode" and path.name != "channel.py"
             for line in _reads_ok(ast.parse(path.read_text(encoding="utf-8")))]
    assert found == []
    assert _reads_ok(ast.parse("if not answer.get('ok'):\n    pass\n")) == [1]  # the rule sees one
