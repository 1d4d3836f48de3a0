"""The services both front ends call: discover, fix, deploy and test.

Each service function takes plain arguments, returns typed results, reports progress
as typed events through a callback, and asks before it changes a node through a
`confirm` callable the caller supplies (a terminal prompt or `--yes` in the CLI, a
modal in the wizard). The CLI commands and the wizard only present what these return;
neither assembles the engines itself.
"""
