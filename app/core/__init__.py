"""Service configuration."""
