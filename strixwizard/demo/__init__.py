"""The demo site: two Strix Halo nodes captured as snapshots, with faults left in."""
