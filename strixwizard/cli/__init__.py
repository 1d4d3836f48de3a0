"""The front doors: the `strixwizard` command line, one module per command, and next steps
(how results look is `strixwizard/present`). Nothing below `cli/` imports it; importing this
package loads nothing."""
