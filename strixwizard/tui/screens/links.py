"""Step 3: the fabric links: which interface of which node meets which, and the transport."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.content import Content
from textual.widgets import Static

from strixwizard.model import Status
from strixwizard.tui.screens.base import StepScreen
from strixwizard.tui.screens.common import needs_discovery
from strixwizard.tui.screens.discover import DiscoverState
from strixwizard.tui.steps import keys
from strixwizard.tui.text import outside
from strixwizard.tui.views import LinkEnd, LinkView, link_views, site_link_results
from strixwizard.tui.widgets.hanging import Hanging
from strixwizard.tui.widgets.notice import Notice
from strixwizard.tui.widgets.status import badge


def _end_text(end: LinkEnd) -> str:
    return f"{end.host} {end.netdev}  {end.address}  {end.rdma}  MTU {end.mtu}  ({end.nic})"


def link_card_content(link: LinkView) -> Content:
    head = Content.assemble(
        badge(link.status), "  ",
        outside(link.transport, "bold $warning" if link.warning else "bold $success"),
        outside(f" · {link.kind} · {link.evidence}"),
    )
    lines = [head, outside("\u00a0\u00a0" + _end_text(link.a)), outside("⇄\u00a0" + _end_text(link.b))]
    if link.note:
        lines.append(outside(link.note, "$warning" if link.warning else "$text-muted"))
    lines += [outside(p) for p in link.problems]
    return Content("\n").join(lines)


class LinkCard(Static):
    def __init__(self, link: LinkView) -> None:
        super().__init__(Hanging(link_card_content(link)),
                         classes="link-card" + (" warning" if link.warning else ""))
        self.border_title = outside(link.id)


class LinksScreen(StepScreen, step="links"):

    def compose_body(self) -> ComposeResult:
        yield Notice(id="links-status", title="Links")
        yield Vertical(id="link-cards")

    def refresh_view(self) -> None:
        notice = self.query_one("#links-status", Notice)
        cards = self.query_one("#link-cards", Vertical)
        cards.remove_children()
        if needs_discovery(self.wizard, notice):
            return
        discovery = self.session.of(DiscoverState).discovery
        assert discovery is not None
        links = link_views(discovery.report)
        site_problems = [r for r in site_link_results(discovery.report) if r.status != Status.PASS]
        rdma = sum(1 for link in links if link.rdma and not link.soft)
        soft = sum(1 for link in links if link.soft)
        if not links:
            detail = "\n".join(f"{r.observed or r.detail} — {r.why}" for r in site_problems)
            notice.say("No fabric link found: no fabric interfaces of two nodes share a subnet.\n"
                       + (detail + "\n" if detail else "")
                       + "Next: cable the RDMA NICs and give both ends an address in one subnet "
                       f"(fabric_address in site.yaml), then discover again ({keys('discover', 'r')}).",
                       "warning",
                       title="No links")
            return
        summary = f"{len(links)} {'link' if len(links) == 1 else 'links'}, {rdma} with hardware RDMA"
        summary += f", {soft} with software RDMA (allow_soft_rdma)." if soft else "."
        if site_problems:
            summary += "\n" + "\n".join(f"{r.status.value.upper()} {r.id}: {r.observed or r.detail}"
                                        for r in site_problems)
        notice.say(summary + "  n: the fixes", "warning" if site_problems or not rdma else "success",
                   title="Links")
        cards.mount_all(LinkCard(link) for link in links)
