"""What the tests share: the labs, the CLI runner, scenarios and stand-ins (no tests here)."""
