"""The RCCL · Ray · vLLM stack (`--stack ray`, the default), as it declares itself: the RCCL/NCCL
environment from the nodes' facts, Ray started with it (head first), the vLLM launch line, and
with --serve `vllm serve` on the head. `plan.py` plans it, `ray.py` starts, recognises and stops
Ray, `serve.py` and `serve_run.py` start and smoke-test vLLM, `rccl.py` says what RCCL the
nodes have, `smoke.py` is its smoke test, `render.py` shows its plan."""

from __future__ import annotations

from strixwizard.deploy.base import Stack
from strixwizard.deploy.declare import PORT, TIMEOUT, Field, Option, whole
from strixwizard.deploy.stacks.ray.plan import (
    NAME,
    plan_ray,
    ray_json,
    ray_question,
    ray_settings_from,
)
from strixwizard.deploy.stacks.ray.ray import RAY_TEMP_DIR, other_ray_left, refuse_other_ray
from strixwizard.deploy.stacks.ray.render import ray_panel, render_ray
from strixwizard.deploy.stacks.ray.serve import RUN_DIR, VLLM_PORT
from strixwizard.deploy.stacks.ray.smoke import smoke_ray

VLLM = "vLLM (--serve, with --stack ray)"

OPTIONS = (
    Option("--ray-temp-dir", "ray_temp_dir", default=RAY_TEMP_DIR, metavar="DIR",
           help="Ray's --temp-dir on each node: its sessions and logs, apart from any other "
           "Ray's (kept after a rollback)"),
    Option("--ray-num-cpus", "ray_num_cpus", type=whole(1, 4096, "a CPU count"), metavar="N",
           help="ray start --num-cpus (default: Ray counts the node's CPUs)"),
    Option("--ray-object-store-bytes", "ray_object_store_bytes",
           type=whole(1 << 20, 1 << 50, "a size in bytes"), metavar="BYTES",
           help="ray start --object-store-memory (default: Ray's, 30%% of memory)"),
    Option("--serve", "serve", action="store_true", group=VLLM, wizard=Field("start vLLM"),
           refused_elsewhere=True,
           help="start `vllm serve MODEL` on the head (tensor parallel over the nodes, Ray "
           "backend), then wait for /health and time one completion"),
    Option("--vllm-port", "vllm_port", type=PORT, default=VLLM_PORT, metavar="PORT", group=VLLM),
    Option("--max-model-len", "max_model_len", type=whole(1, 1 << 24, "a token count"), metavar="N",
           group=VLLM,
           help="vllm serve --max-model-len"),
    Option("--no-enforce-eager", "no_enforce_eager", action="store_true", group=VLLM,
           help="keep vLLM's graph capture on Strix Halo (default: --enforce-eager there, graph "
           "capture on gfx1151 times out)"),
    Option("--serve-timeout", "serve_timeout", type=TIMEOUT, default=900.0, metavar="S", group=VLLM,
           help="how long the smoke test waits for /health (default 900 s)"),
    Option("--serve-run-dir", "serve_run_dir", default=RUN_DIR, metavar="DIR", group=VLLM,
           help="vLLM's pid file and log on the head (the log is kept after a rollback)"),
    Option("--vllm-bin-dir", "vllm_bin_dir", metavar="DIR", group=VLLM,
           help="where `vllm` is on the head (default: PATH)"),
)

STACK = Stack(
    NAME, "RCCL · Ray · vLLM", plan_ray, smoke_ray, ray_settings_from, ray_question,
    render=render_ray, json=ray_json, panel=ray_panel, options=OPTIONS,
    about="the RCCL/NCCL and Ray environment from the nodes' facts (exact NCCL_IB_HCA, GID index "
    "from sysfs), written to each node, Ray started with it (head first), the vLLM launch line; "
    "its smoke test: Ray's node count and a 2-rank RCCL all-reduce that must use NET/IB on the "
    "planned device. --serve also starts `vllm serve --model` on the head (tensor parallel over "
    "the nodes, Ray backend, --enforce-eager on Strix Halo), waits for /health and times one "
    "completion",
    model_hint="vLLM model (HF id or a path on the nodes)",
    hints={"--persist": " (the ray stack starts Ray for this boot only)"},
    observe=refuse_other_ray, after_undo=other_ray_left,
    stops_last=frozenset({"ray (head)"}), order=0)

__all__ = ["STACK"]
