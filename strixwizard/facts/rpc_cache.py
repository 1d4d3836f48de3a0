"""The RPC server's tensor cache on a node: its folder, how much it holds, how much room is left.

`ggml-rpc-server -c` (deploy passes it unless --no-rpc-cache) saves every weight tensor larger
than 10 MiB a client sends it (`HASH_THRESHOLD`, ggml/src/ggml-rpc/ggml-rpc.cpp:87) as one file
named by the tensor's FNV hash, and reads it back when a client sends that hash again
(`rpc_server::set_tensor`, `get_cached_file`, ggml-rpc.cpp:1469-1500). The folder is
`$LLAMA_CACHE/rpc`, else `$XDG_CACHE_HOME/llama.cpp/rpc`, else `$HOME/.cache/llama.cpp/rpc`
(`fs_get_cache_directory`, tools/rpc/rpc-server.cpp:64-83; llama.cpp 0c1e570 as vendored in
llama-cpp-python 0.3.36). Nothing in the server ever deletes a file there.

Read as root (the deploy runs the server as root, so root's environment and HOME name the
folder), by a fixed script that prints `cache PATH`, then `du -s -k` of the folder (or
`absent`), then `df -P -k` of the folder or of its nearest existing parent.
"""

from __future__ import annotations

from dataclasses import dataclass

from strixwizard.facts.outputs import command_output, run_survey
from strixwizard.probe import Probe

#: One fixed script; no value of ours inside it.
SCRIPT = r"""
dir="${LLAMA_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/llama.cpp}/rpc"
echo "cache $dir"
if [ -d "$dir" ]; then
  du -s -k "$dir"
  at="$dir"
else
  echo absent
  at=$(dirname "$dir")
  while [ ! -d "$at" ]; do at=$(dirname "$at"); done
fi
df -P -k "$at"
"""


@dataclass(frozen=True)
class RpcCache:
    """The tensor cache folder and the file system it is (or would be) on."""

    path: str
    exists: bool
    size_bytes: int | None  # None: the folder does not exist
    fs_size_bytes: int
    fs_free_bytes: int
    mount: str

    @property
    def fs_used_fraction(self) -> float:
        if self.fs_size_bytes <= 0:
            return 0.0
        return 1 - self.fs_free_bytes / self.fs_size_bytes


def parse_du_sk(line: str) -> int:
    """Bytes of one `du -s -k` line (`KIB<TAB>PATH`)."""
    size, sep, _path = line.partition("\t")
    if not sep or not size.isdigit():
        raise ValueError(f"not a `du -s -k` line: {line!r}")
    return int(size) * 1024


def parse_df_pk(text: str) -> tuple[int, int, str]:
    """(size, available, mount point) in bytes from `df -P -k`: the POSIX header, then one
    line per file system (`Filesystem 1024-blocks Used Available Capacity Mounted on`)."""
    lines = [line for line in text.splitlines() if line.strip()]
    if len(lines) != 2 or not lines[0].startswith("Filesystem") or "1024-blocks" not in lines[0]:
        raise ValueError(f"not `df -P -k` output: {text[:80]!r}")
    fields = lines[1].split()
    at = next((i for i, f in enumerate(fields) if f.endswith("%") and i >= 4), None)
    if at is None or not all(f.isdigit() for f in fields[at - 3:at]):
        raise ValueError(f"not a `df -P -k` line: {lines[1]!r}")
    blocks, _used, available = (int(f) for f in fields[at - 3:at])
    return blocks * 1024, available * 1024, " ".join(fields[at + 1:])


def parse_rpc_cache(text: str) -> RpcCache:
    lines = text.splitlines()
    if len(lines) < 4 or not lines[0].startswith("cache /"):
        raise ValueError(f"not the RPC cache survey: {text[:80]!r}")
    path = lines[0].removeprefix("cache ")
    size = None if lines[1] == "absent" else parse_du_sk(lines[1])
    fs_size, free, mount = parse_df_pk("\n".join(lines[2:]))
    return RpcCache(path, size is not None, size, fs_size, free, mount)


RPC_CACHE = command_output("llama.rpc_cache", ("sh", "-c", SCRIPT), parse_rpc_cache, root=True)


@dataclass(frozen=True)
class RpcCacheReading:
    """The node's RPC cache, or why it is not known."""

    cache: RpcCache | None
    why_unknown: str = ""


def rpc_cache(probe: Probe) -> RpcCacheReading:
    reading = run_survey(probe, RPC_CACHE, "the RPC cache survey")
    return RpcCacheReading(reading.value, reading.note)
