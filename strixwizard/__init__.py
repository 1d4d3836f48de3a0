"""strixwizard: set up and verify RDMA clusters of AMD Strix Halo nodes.

Its judges and plans are the top-level packages `checks` and `fixes` shipped beside it;
importing strixwizard makes sure those are its own (`strixwizard/toplevel.py` says why they
keep their names)."""

from strixwizard.toplevel import require_own_packages

__version__ = "0.1.0"

require_own_packages()
