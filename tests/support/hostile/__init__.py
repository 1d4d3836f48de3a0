"""Hostile inputs: site files and inventories (YAML files here) and strings (`strings`)."""
