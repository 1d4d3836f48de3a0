"""`strixwizard advise --site/--demo/--snapshot`: read the site's nodes once and hand the advice
each node's llama.cpp backend and memory for weights (decode.site_nodes). The wizard's model
picker reads model files through `model_shape`, the one reader `advise --model` uses."""

from __future__ import annotations

from strixwizard.decode.site_nodes import SiteNode, site_node
from strixwizard.services.common import OnNode
from strixwizard.services.discover import read_nodes
from strixwizard.services.nodes import RunRequest


def site_nodes(request: RunRequest, on_node: OnNode | None = None) -> list[SiteNode]:
    """Each node of the site, in the site's order: a node that could not be read has neither
    backend nor memory, and says why."""
    found = read_nodes(request, on_node)
    out = []
    for node in found.nodes:
        if node.facts is None:
            why = node.report.error or "not reached"
            out.append(SiteNode(node.name, None, why, None, why))
            continue
        out.append(site_node(node.name, node.facts.llama, node.facts.memory))
    return out
