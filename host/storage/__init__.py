"""The storage layer: every SQL statement (store.py) over its two engines, SQLite and PostgreSQL (databases.py)."""
