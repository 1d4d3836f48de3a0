"""The ds4 stack (`deploy --stack ds4`) as it declares itself: antirez/ds4's two-box tensor
parallelism for DeepSeek V4 (and GLM), rank 1 (`ds4`) on the worker and rank 0 (`ds4-server`)
on the head, over ds4's own gate transport (`--transport rdma|odl|tcp`, chosen from the site's
link), then one completion and the transport both ranks' logs name.

`plan.py` chooses the transport and plans both launch lines, `smoke.py` judges the pair from
its logs and runs the smoke test, `render.py` shows the plan. ds4 cannot run where the tests
run (no GPU): the verdict is tested on published log lines, the orchestration on the namespace
lab with a stand-in (tests/support/standin_ds4.py, not ds4).
"""

from __future__ import annotations

from strixwizard.deploy.base import Stack
from strixwizard.deploy.declare import PORT, TIMEOUT, Field, Option, whole
from strixwizard.deploy.stacks.ds4.plan import (
    API_PORT,
    COORDINATOR_TARGET,
    NAME,
    RUN_DIR,
    TP_PORT,
    TRANSPORTS,
    ds4_json,
    ds4_question,
    ds4_settings_from,
    plan_ds4,
)
from strixwizard.deploy.stacks.ds4.render import ds4_panel, render_ds4
from strixwizard.deploy.stacks.ds4.smoke import smoke_ds4

OPTIONS = (
    Option("--ds4-transport", "ds4_transport", choices=TRANSPORTS, metavar="rdma|odl|tcp",
           wizard=Field("ds4 transport", "from the link"),
           help="ds4's --transport (default: from the site's link: RoCE v2/InfiniBand rdma, USB4 "
           "with --ds4-odinlink odl, else tcp, a fallback); never auto, which falls back silently"),
    Option("--ds4-odinlink", "ds4_odinlink", action="store_true",
           wizard=Field("OdinLink on both nodes"),
           help="the OdinLink provider (odl_tb5 driver, libodl_tb5) is on both nodes: a USB4 link "
           "then asks --transport odl (needs ds4 with antirez/ds4#1018)"),
    Option("--ds4-odl-device", "ds4_odl_device", type=whole(0, 63, "a device number"), default=0, metavar="N",
           help="the OdinLink device index, DS4_TP_ODL_DEV (default 0: /dev/odl_tb5_0)"),
    Option("--ds4-tp-port", "ds4_tp_port", type=PORT, default=TP_PORT, metavar="PORT",
           help=f"the port rank 0 listens on for rank 1 (default {TP_PORT})"),
    Option("--ds4-api-port", "ds4_api_port", type=PORT, default=API_PORT, metavar="PORT",
           help=f"ds4-server's HTTP port (default {API_PORT})"),
    Option("--ds4-api-host", "ds4_api_host", metavar="ADDR",
           help="ds4-server's HTTP address (default: the head's fabric address)"),
    Option("--ds4-ctx", "ds4_ctx", type=whole(1, 1 << 24, "a token count"), metavar="N",
           help="ds4 -c (default: ds4's own)"),
    Option("--ds4-bin-dir", "ds4_bin_dir", metavar="DIR",
           help="where ds4 and ds4-server are on the nodes (default: PATH)"),
    Option("--ds4-run-dir", "ds4_run_dir", default=RUN_DIR, metavar="DIR",
           help="pid files and logs on each node (logs are kept after a rollback)"),
    Option("--ds4-health-timeout", "ds4_health_timeout", type=TIMEOUT, default=1800.0,
           metavar="S", help="how long the smoke test waits for ds4-server's /health while both "
           "ranks load the model (default 1800 s)"),
)

STACK = Stack(
    NAME, "ds4 tensor parallelism", plan_ds4, smoke_ds4, ds4_settings_from, ds4_question,
    render=render_ds4, json=ds4_json, panel=ds4_panel, options=OPTIONS,
    about="antirez/ds4 TP=2 (DeepSeek V4, GLM): ds4 on the worker, ds4-server on the head, over "
    "ds4's rdma or odl transport from the site's link (else TCP, said to be a fallback), then "
    "one completion and the transport both ranks' logs name",
    model_hint="GGUF file path, the same on both nodes",
    # rank 0 after its worker: ds4's rank 1 exits by itself when rank 0's socket closes
    # (ds4_tp_worker_run: "control channel closed"), which a rollback would then find stopped
    # and leave its pid file behind; stopped first, it is stopped by its PID
    stops_last=frozenset({COORDINATOR_TARGET}),
    order=20)

__all__ = ["STACK"]
