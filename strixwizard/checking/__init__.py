"""The check engine and the declaration of checks, as `fixing/` is for fixes:
`declare` (the `node_check`/`link_check`/`site_check` decorators, findings, the catalog)
and `engine` (runs the registry it is given over a site's nodes and links)."""
