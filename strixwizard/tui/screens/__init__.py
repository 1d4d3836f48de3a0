"""One screen per step of the wizard."""
