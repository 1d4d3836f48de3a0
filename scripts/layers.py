#!/usr/bin/env python3
"""Print the product's layers and every rule `tests/test_layering.py` holds the code to: the
imports that run back up the layers, import loops, engines importing front ends, the wizard
reaching into the command line, Textual below the wizard, a measurement kind or a deploy stack
known by name outside its declaration, and module-level caches keyed on object identity.

    python scripts/layers.py

Read from the source by `tests/support/layering.py` (every import, deferred ones included,
`TYPE_CHECKING` blocks left out). Exit status 1 when a rule other than the allowed upward imports
is broken, so the script can be run before a commit.
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.support.layering import (
    LAYERS,
    cycles,
    edges,
    front_imports_from_engines,
    identity_caches,
    kind_name_comparisons,
    layer_name,
    module_files,
    present_imports_of_textual,
    stack_knowledge,
    up_imports,
    wizard_imports_of_the_cli,
)


def _rule(title: str, found: Sequence[object]) -> int:
    print(f"{title}: {len(found)}")
    for item in found:
        print(f"  {item}")
    return len(found)


def main() -> int:
    from strixwizard.deploy.plan import STACKS

    modules = module_files()
    sizes = Counter(layer_name(m) for m in modules)
    print("layers, top down (modules):")
    for name, prefixes in LAYERS:
        print(f"  {name:<9} {sizes[name]:>3}  {', '.join(prefixes)}")
    print(f"imports: {len(edges())} ({sum(e.deferred for e in edges())} deferred)")
    up = up_imports()
    print(f"imports that run back up the layers (a few allowed, each with its reason in "
          f"tests/test_layering.py): {len(up)}")
    for edge in up:
        print(f"  {edge}  [{layer_name(edge.source)} -> {layer_name(edge.target)}]")
    broken = _rule("import loops", [" <-> ".join(group) for group in cycles()])
    broken += _rule("engines importing a front end", front_imports_from_engines())
    broken += _rule("the wizard importing the command line", wizard_imports_of_the_cli())
    broken += _rule("textual imported below the wizard", present_imports_of_textual())
    broken += _rule("a measurement kind compared by name", kind_name_comparisons())
    broken += _rule("a deploy stack known by name outside its package", stack_knowledge(set(STACKS)))
    broken += _rule("module-level caches keyed on object identity", identity_caches())
    return 1 if broken else 0


if __name__ == "__main__":
    raise SystemExit(main())
