"""The fix engine: plans (pure data) from fixes/, previews, the executor, journals, rollback.

Modules: `model` (Step, Plan), `context` (what a plan function gets), `readers` (values),
`planning` (plan_site), `runner`/`ssh` (the runners: the only code that writes, through the
node session's typed ops channel, `node/channel.py`, to `onnode/ops.py` on the node),
`site_apply` (a runner per node, and a journal's runner again for its rollback), `journal`,
`lock` (one apply at a time, per site and per node), `engine` (apply_plan, verify,
rollback_run), `ansible` (fleet export); their text is `present/fix_text.py`, `strixwizard fix`
itself `cli/fix.py`. This package's `__init__` imports nothing, so `strixwizard doctor` stays
light.
"""
