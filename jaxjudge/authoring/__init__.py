"""Problem authoring: check-problem, new-problem and the shared test generator."""
