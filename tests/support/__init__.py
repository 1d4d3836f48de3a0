"""What the tests share: the labs, the CLI runner, scenarios, stand-ins and the helpers several
test modules use (the wizard under Pilot, fix plans, refusals of bad input...). No tests here, and
a test module never imports another test module (tests/test_suite_layout.py)."""
