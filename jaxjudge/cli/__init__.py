"""The `jaxjudge` command: the fast launcher and every command."""
