"""Durable state of the App: SQLite (sql.py) or PostgreSQL (postgres.py), chosen by choose.py."""
