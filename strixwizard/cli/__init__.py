"""The front doors: the `strixwizard` command line, one module per command, text rendering
and next steps. Nothing below `cli/` imports it; importing this package loads nothing."""
