"""The remote client: `jaxjudge submit` and `--server` talk to a running service through it."""
