"""The check engine and the declaration of checks, as `fixing/` is for fixes:
`declare` (the `node_check`/`link_check`/`site_check` decorators, findings, the catalog)
and `engine` (`run_doctor`: runs the registry the services hand it over one
`discovery.Discovery`: node checks on its nodes, link and site checks on its topology)."""
