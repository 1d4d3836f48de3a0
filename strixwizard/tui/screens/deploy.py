"""Step 5: deploy. Not built yet (issue 7): say what it will do, and that it is not here."""

from __future__ import annotations

from textual.app import ComposeResult

from strixwizard.tui.screens.base import StepScreen
from strixwizard.tui.widgets.notice import Notice

DEPLOY_TEXT = """\
Deploying is not available in this version of strixwizard.

When it is, this step will:
  • generate the RCCL/NCCL environment from the discovered facts: the exact
    NCCL_IB_HCA=device:port of each node and the RoCE v2 GID index read from
    its GID table (never assumed);
  • start the Ray head and workers with that environment;
  • print the vLLM launch line for --tensor-parallel-size N;
  • check that RCCL really used NET/IB and did not fall back to NET/Socket.

Nothing is planned or changed here. Press n to go on to the tests."""


class DeployScreen(StepScreen):
    STEP = "deploy"

    def compose_body(self) -> ComposeResult:
        yield Notice(DEPLOY_TEXT, "info", title="Deploy: not in this version", id="deploy-status")
