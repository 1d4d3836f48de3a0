"""`strixwizard advise --site/--demo/--snapshot`: read the site's nodes once and hand the advice
each node's llama.cpp backend and memory for weights (decode.site_nodes). The wizard's model
picker reads model files through `model_shape`, the one reader `advise --model` uses."""

from __future__ import annotations

from typing import TYPE_CHECKING

from strixwizard.decode.site_nodes import SiteNode, site_node

if TYPE_CHECKING:
    from strixwizard.decode.shapes import ModelShape
    from strixwizard.services.common import OnNode
    from strixwizard.services.nodes import RunRequest


def model_shape(model: str, quant: str | None = None) -> ModelShape:
    """The model `advise --model` names: a catalog name (with its llama.cpp quantization), a
    config.json (read under readback's bounds) or a GGUF file (its header and tensor table).
    UsageError, with the cause, for a missing or unreadable file or an unknown name."""
    from strixwizard.decode.catalog import resolve

    return resolve(model, quant)


def site_nodes(request: RunRequest, on_node: OnNode | None = None) -> list[SiteNode]:
    """Each node of the site, in the site's order: a node that could not be read has neither
    backend nor memory, and says why."""
    from strixwizard.services.discover import read_nodes

    found = read_nodes(request, on_node)
    out = []
    for node in found.nodes:
        if node.facts is None:
            why = node.report.error or "not reached"
            out.append(SiteNode(node.name, None, why, None, why))
            continue
        out.append(site_node(node.name, node.facts.llama, node.facts.memory))
    return out
