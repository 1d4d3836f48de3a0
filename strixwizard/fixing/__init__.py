"""The fix engine: plans (pure data) from fixes/, previews, the executor, journals, rollback.

Modules: `model` (Step, Plan), `readers` (values), `planning` (plan_site),
`runner`/`ssh` and `onnode/ops.py` (the only code that writes), `journal`, `engine`
(apply_plan, verify, rollback_run), `targets` (a runner per node), `ansible` (fleet
export); their text is `present/fix_text.py`, `strixwizard fix` itself `cli/fix.py`.
This package's `__init__` imports nothing, so `strixwizard doctor` stays light.
"""
