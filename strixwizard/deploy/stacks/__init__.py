"""The deploy stacks, one package each (`ray/`, `llama_rpc/`, ...), found by `deploy/plan.py`
without a list: every subpackage here is a stack and its `__init__` holds its declaration,
`STACK` (a `deploy.base.Stack`). docs/extending/stack.md is the recipe for a new one.
"""
