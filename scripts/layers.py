#!/usr/bin/env python3
"""Print the product's layers, the imports that run back up them and any import loop.

    python scripts/layers.py

The same figures `tests/test_layering.py` holds the code to (read from the source by
`tests/support/layering.py`: every import, deferred ones included, `TYPE_CHECKING` blocks left out).
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.support.layering import LAYERS, cycles, edges, layer_name, module_files, up_imports


def main() -> int:
    modules = module_files()
    sizes = Counter(layer_name(m) for m in modules)
    print("layers, top down (modules):")
    for name, prefixes in LAYERS:
        print(f"  {name:<9} {sizes[name]:>3}  {', '.join(prefixes)}")
    print(f"imports: {len(edges())} ({sum(e.deferred for e in edges())} deferred)")
    up = up_imports()
    print(f"imports that run back up the layers: {len(up)}")
    for edge in up:
        print(f"  {edge}  [{layer_name(edge.source)} -> {layer_name(edge.target)}]")
    loops = cycles()
    print(f"import loops: {len(loops)}")
    for group in loops:
        print("  " + " <-> ".join(group))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
