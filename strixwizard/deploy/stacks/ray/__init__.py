"""The RCCL · Ray · vLLM stack (`--stack ray`, the default): the RCCL/NCCL environment from the
nodes' facts, Ray started with it (head first), the vLLM launch line, and with --serve
`vllm serve` on the head. `plan.py` plans it, `ray.py` starts and stops Ray, `serve.py` and
`serve_run.py` start and smoke-test vLLM, `rccl.py` says what RCCL the nodes have."""

from __future__ import annotations

from strixwizard.deploy.stacks.ray.plan import RAY as STACK

__all__ = ["STACK"]
