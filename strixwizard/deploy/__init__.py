"""Deploy the tensor-parallel stack on a fixed fabric: RCCL environment, Ray, vLLM launch line.

Modules: `env` (the NCCL/RCCL/Ray environment from facts, each value with its
provenance; refuses an RDMA profile without an RDMA path), `rccl` (RCCL and
rccl-tests presence, build guidance), `plan` (fix-engine `Plan`s per node),
`smoke` (the 2-rank all-reduce and `ray status` verdicts), `render` (text);
`strixwizard deploy` itself is `cli/deploy.py`. This `__init__` imports nothing: `doctor` stays light.
"""
