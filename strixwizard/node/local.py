"""The node session on this machine: subprocess for programs, `ops.handle` in-process for
the fix engine (pyroute2 for MTUs, in a network namespace when one is given)."""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
from collections.abc import Sequence
from typing import Any

from strixwizard.node.channel import OpsChannel
from strixwizard.node.command import program_name
from strixwizard.node.process import Process, drained, spawn, start_readers, supervised_argv
from strixwizard.node.session import Spec
from strixwizard.probe import Probe


class LocalOps:
    """The ops transport of this machine: requests answered in this process, MTUs through
    netlink (in `netns` if given)."""

    def __init__(self, netns: str | None = None) -> None:
        self.netns = netns

    def _mtu(self, ifname: str, mtu: int | None) -> dict[str, Any]:
        from pyroute2 import IPRoute
        from pyroute2.netlink.exceptions import NetlinkError

        try:
            ipr = IPRoute(netns=self.netns) if self.netns else IPRoute()
        except OSError as error:
            return {"ok": False, "error": f"netlink: {error}"}
        try:
            index = ipr.link_lookup(ifname=ifname)
            if not index:
                return {"ok": False, "error": f"no interface {ifname}"}
            if mtu is None:
                return {"ok": True, "value": str(ipr.get_links(index[0])[0].get_attr("IFLA_MTU"))}
            ipr.link("set", index=index[0], mtu=mtu)
            return {"ok": True}
        except NetlinkError as error:
            return {"ok": False, "error": f"netlink refused MTU {mtu} on {ifname}: "
                    f"{os.strerror(error.code) if error.code else error}"}
        finally:
            ipr.close()

    def exchange(self, request: dict[str, Any]) -> dict[str, Any]:
        from strixwizard.onnode import ops

        if request.get("op") == "mtu_get":
            return self._mtu(str(request["ifname"]), None)
        if request.get("op") == "mtu_set":
            return self._mtu(str(request["ifname"]), int(request["mtu"]))
        return ops.handle(request)

    def close(self) -> None:
        return None


class LocalSession:
    """This machine (the demo's loopback test, local nodes, unit tests)."""

    def __init__(self, name: str = "localhost", python: str = sys.executable,
                 netns: str | None = None) -> None:
        self.name = name
        self.python = python
        self.netns = netns
        self.where = f"local (netns {netns})" if netns else "local"

    def collect(self, spec: Spec) -> Probe:
        from strixwizard.probe.local import LocalProbe

        return LocalProbe(self.name)

    def collect_archive(self, spec: Spec) -> bytes:
        from strixwizard import __version__
        from strixwizard.onnode.collector import TarSink, collect

        buffer = io.BytesIO()
        collect(dict(spec), TarSink(buffer), __version__)
        return buffer.getvalue()

    def ops(self) -> OpsChannel:
        return OpsChannel(LocalOps(self.netns))

    def start(self, argv: Sequence[str], limit_s: float, label: str = "") -> Process:
        popen = subprocess.Popen(
            supervised_argv(self.python, argv, limit_s),
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )
        stdin, stdout, stderr = popen.stdin, popen.stdout, popen.stderr
        assert stdin is not None and stdout is not None and stderr is not None

        def close_stdin() -> None:
            with contextlib.suppress(OSError):
                stdin.close()

        def release() -> None:
            close_stdin()
            if popen.poll() is None:
                popen.kill()  # our own child, by its Popen handle
            popen.wait(timeout=5)

        process = Process(self.name, label or argv[0], close_stdin, release, program_name(argv))
        readers = start_readers(process, stdout.read1, stderr.read1)  # type: ignore[attr-defined]

        def reap() -> None:
            status = popen.wait()
            drained(readers)
            process._end(status)

        spawn(reap, f"wait-{self.name}")
        return process

    def close(self) -> None:
        return None
