"""strixwizard: set up and verify RDMA clusters of AMD Strix Halo nodes."""

__version__ = "0.1.0"
