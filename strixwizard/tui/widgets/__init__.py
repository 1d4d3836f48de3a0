"""Small widgets shared by the step screens."""
