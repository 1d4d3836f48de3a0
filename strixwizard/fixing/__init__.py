"""The fix engine: plans (pure data) from the fix registry, previews, the executor, journals,
locks and rollback.

Modules: `context` (what a fix's plan function is given, and how a fix is declared),
`model` (Step, Plan, SitePlan), `readers` (a step's value), `planning` (`plan_site`: the
registry the services hand it over one `discovery.Discovery`), `runner`/`ssh` (the runners:
the only code that writes, through the node session's typed ops channel, `node/channel.py`,
to `onnode/ops.py` on the node), `site_apply` (a runner per node of a discovery, then
`engine`; a journal's runner again for its rollback), `engine` (`apply_plan`, `verify`,
`rollback_run`, `refuse_unfinished`), `journal`, `lock` (one apply at a time, per site and
per node: the site's lock taken once per run by the command and handed down), `ansible`
(fleet export); their text is `present/fix_text.py`, `strixwizard fix` itself `cli/fix.py`
over `services/fix.py`. This package's `__init__` imports nothing, so `strixwizard doctor`
stays light.
"""
