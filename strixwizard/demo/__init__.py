"""The demo site: two Strix Halo nodes captured as snapshots, with faults left in
(`scenarios`), synthesised in the formats real machines show (`builder`, `hardware`) and
captured through the real collector (`scripts/build_demo.py`)."""
