"""Step 6: live tests per link (RDMA latency and bandwidth, TCP baseline, RCCL)."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Vertical

from strixwizard.tui.screens.base import StepScreen
from strixwizard.tui.screens.common import needs_discovery
from strixwizard.tui.views import link_views
from strixwizard.tui.widgets.notice import Notice


class TestScreen(StepScreen):
    STEP = "test"

    def compose_body(self) -> ComposeResult:
        yield Notice(id="test-status", title="Test")
        yield Vertical(id="test-panels")

    def refresh_view(self) -> None:
        notice = self.query_one("#test-status", Notice)
        if needs_discovery(self.session, notice):
            return
        discovery = self.session.discovery
        assert discovery is not None
        thresholds = discovery.site.thresholds
        links = link_views(discovery.report)
        planned = "\n".join(f"  • {link.id} ({link.transport})" for link in links) or "  (no link found)"
        notice.say(
            "Live tests are not available in this version of the wizard.\n\n"
            "When they are, this step runs on each link, with a PASS/FAIL per figure:\n"
            f"  RDMA latency ≤ {thresholds.rdma_latency_us:g} µs one-way, TCP baseline beside it "
            f"(≤ {thresholds.tcp_latency_us:g} µs),\n"
            f"  RDMA bandwidth ≥ {thresholds.bandwidth_fraction:.0%} of the link rate, and the RCCL "
            "all-reduce; then the all-pairs matrix.\n\n"
            f"Links it would test:\n{planned}\n\nPress n for the report.",
            "info", title="Test: not in this version")
