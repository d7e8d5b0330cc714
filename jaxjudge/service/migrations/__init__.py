"""Alembic migrations of the submission store (SQLite and PostgreSQL); run by
`jaxjudge.service.migrate`."""
