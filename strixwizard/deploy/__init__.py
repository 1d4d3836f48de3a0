"""Deploy a stack on the site's nodes: plan it from their facts, apply it through the fix
engine (journalled, all-or-nothing), smoke-test it, roll it back.

Generic modules: `base` (the settings, the plan type, the step builders and the `Stack` a
stack declares itself with), `declare` (a stack's options and wizard panel as data), `plan`
(the registry: every package under `stacks/`, and the dispatch to its declaration), `engine`
(observe, apply, smoke, roll back), `env` (the NCCL/RCCL environment from facts, each value
with its provenance; refuses an RDMA profile without an RDMA path), `process` (the launcher of
a program a deploy starts and stops), `render` (the text every plan shares), `smoke` (the
verdict types), `remote`, `health`. Each stack is a package under `stacks/` (`ray/`,
`llama_rpc/`; docs/extending/stack.md); none of the generic modules names one.
`strixwizard deploy` itself is `cli/deploy.py`. This `__init__` imports nothing: `doctor` stays light.
"""
