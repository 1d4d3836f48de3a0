"""A program a deploy starts and a rollback stops: the launcher every stack shares (`START`,
written to the target directory by the plan), the read of its state (`STATE`) and its stop
(`STOP`), and the fix-engine step that starts it. Pure: the scripts are text, run on the node.

`START` takes every value as a positional argument: it finds the first existing binary,
exports `NAME=value` pairs given as data, starts the program in its own session with its log
and a pid file, and waits until it listens. `STOP` ends exactly that PID (and start time);
the log stays.
"""

from __future__ import annotations

from strixwizard.fixing.model import Kind, Read, Step

#: Shell functions of the launcher and of the state/stop reads. A pid file holds the PID, the
#: binary and the process's start time (field 22 of /proc/PID/stat, in clock ticks since
#: boot): PID and start time together name one process, so a reused PID is never taken for
#: ours, and a program run by an interpreter (a Python console script such as `vllm`, whose
#: /proc/PID/exe is python) is recognised too. A pid file without a start time falls back to
#: comparing /proc/PID/exe with the binary. A zombie (state Z: exited, not yet reaped by
#: init) counts as gone, so a stop does not wait on a slow reaper.
SAME = r"""started() { sed 's/^.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f20; }
alive() { s=$(sed 's/^.*) //' "/proc/$1/stat" 2>/dev/null | cut -c1); [ -n "$s" ] && [ "$s" != Z ]; }
same() {
  case $1 in ''|*[!0-9]*) return 1 ;; esac
  alive "$1" || return 1
  if [ -n "$3" ]; then [ "$(started "$1")" = "$3" ]; return; fi
  exe=$(readlink "/proc/$1/exe" 2>/dev/null)
  [ -n "$exe" ] && { [ "$exe" = "$2" ] || [ "$exe" = "$2 (deleted)" ]; }
}
"""
#: Starts a program in its own session, pid file + log, then waits until it listens.
#: $1 pid file, $2 log, $3 port, $4 mode (rpc: must listen; server (llama-server) and http
#: (vllm): alive is enough, the model may still load; server also adapts -sm/--no-mmap to
#: the build's --help; dials (a program that only connects out, ds4's worker rank): alive
#: after 2 s is enough, never a 20 s wait for a port it will not open), then binary
#: candidates, `--`, NAME=value pairs, `--`, arguments.
#: Written to DIR/llama-start.sh by the plan (so a failing start reports a short command).
START = r"""# Written by `strixwizard deploy`; `deploy --rollback` removes it.
""" + SAME + r"""pidfile=$1 log=$2 port=$3 mode=$4; shift 4
bin= names=
while [ $# -gt 0 ] && [ "$1" != -- ]; do
  [ -z "$bin" ] && bin=$(command -v -- "$1" 2>/dev/null)
  names="$names $1"; shift
done
[ $# -gt 0 ] && shift
if [ -z "$bin" ]; then echo "not installed: none of$names" >&2; exit 1; fi
bin=$(readlink -f -- "$bin")
while [ $# -gt 0 ] && [ "$1" != -- ]; do export "$1"; shift; done
[ $# -gt 0 ] && shift
hex=$(printf '%04X' "$port")
listening() { grep -q ": [0-9A-F]*:$hex [0-9A-F]*:0000 0A " /proc/net/tcp /proc/net/tcp6 2>/dev/null; }
if [ -f "$pidfile" ]; then
  old=$(head -n 1 "$pidfile")
  if same "$old" "$(sed -n 2p "$pidfile")" "$(sed -n 3p "$pidfile")"; then
    echo "already running as PID $old ($pidfile)" >&2; exit 1
  fi
fi
if listening; then echo "port $port is taken by another program: not started" >&2; exit 1; fi
if [ "$mode" = server ]; then
  help=$("$bin" --help 2>&1)
  first=1 prev=
  for a do
    [ "$first" = 1 ] && { set --; first=0; }
    if [ "$prev" = -sm ]; then
      modes=$(printf '%s\n' "$help" | grep -e --split-mode)
      case $modes in *[{,]"$a"[,}]*) ;; *) echo "$bin: this build has no split mode $a" >&2; exit 1 ;; esac
    fi
    case $a in
      --no-mmap) case $help in *--no-mmap*) set -- "$@" "$a" ;; *) set -- "$@" --load-mode none ;; esac ;;
      *) set -- "$@" "$a" ;;
    esac
    prev=$a
  done
fi
mkdir -p -- "$(dirname -- "$log")"
( setsid "$bin" "$@" </dev/null >"$log" 2>&1 & pid=$!
  printf '%s\n%s\n%s\n' "$pid" "$bin" "$(started "$pid")" >"$pidfile" )
pid=$(head -n 1 "$pidfile")
i=0
while [ $i -lt 200 ]; do
  if ! alive "$pid"; then
    why=$(grep -i -m 3 -e error -e failed -e cannot -e invalid "$log" | tr '\n' ' ')
    [ -n "$why" ] || why=$(tail -n 3 "$log" | tr '\n' ' ')
    echo "$bin exited at start: $why" >&2; rm -f -- "$pidfile" "$log"; exit 1
  fi
  if listening; then echo "$pid"; exit 0; fi
  if [ "$mode" = dials ] && [ $i -ge 20 ]; then echo "$pid (dials out)"; exit 0; fi
  sleep 0.1; i=$((i + 1))
done
if [ "$mode" != rpc ]; then echo "$pid (still loading)"; exit 0; fi
kill "$pid"; sleep 0.5; rm -f -- "$pidfile" "$log"
echo "$bin does not listen on port $port after 20 s" >&2; exit 1
"""
#: `running` when the pid file's PID is still the process it started, else `stopped`.
STATE = SAME + r"""pid=$(head -n 1 "$0" 2>/dev/null)
if same "$pid" "$(sed -n 2p "$0" 2>/dev/null)" "$(sed -n 3p "$0" 2>/dev/null)"; then
  echo running
else
  echo stopped
fi
"""
#: Ends the pid file's PID (TERM, then KILL after 10 s) if it is still the process it
#: started, and removes the pid file. The log stays in the run directory for the user.
STOP = SAME + r"""pid=$(head -n 1 "$0" 2>/dev/null)
if same "$pid" "$(sed -n 2p "$0" 2>/dev/null)" "$(sed -n 3p "$0" 2>/dev/null)"; then
  kill "$pid"
  i=0
  while alive "$pid" && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
  alive "$pid" && kill -9 "$pid"
fi
rm -f -- "$0"
"""


def candidates(names: tuple[str, ...], bin_dir: str | None) -> tuple[str, ...]:
    found = tuple(f"{bin_dir.rstrip('/')}/{n}" for n in names) if bin_dir else ()
    return (*found, *names)


def process_step(target: str, summary: str, pidfile: str, argv: tuple[str, ...]) -> Step:
    return Step(kind=Kind.COMMAND, target=target, summary=summary,
                read=Read("command", argv=("sh", "-c", STATE, pidfile), parse="text"),
                before="stopped", after="running", argv=argv,
                undo_argv=("sh", "-c", STOP, pidfile), before_known=False)


def is_process_stop(undo_argv: tuple[str, ...]) -> bool:
    """The undo of a `process_step`: it stops exactly the process its pid file names."""
    return undo_argv[:3] == ("sh", "-c", STOP)
