"""`python -m jaxjudge ...` is the `jaxjudge` command."""

from jaxjudge.cli.launch import main

if __name__ == "__main__":
    main()
