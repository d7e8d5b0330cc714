"""Isolation of every sandboxed run: one module per layer, the supervisor, the warm pool, work
dirs and the parent's private state files."""
