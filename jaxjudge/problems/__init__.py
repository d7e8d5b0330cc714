"""Problem packages: loading and validating `problem.toml`, statements and tests, and finding
the folders problem sets live in."""
