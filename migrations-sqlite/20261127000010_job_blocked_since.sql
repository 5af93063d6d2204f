-- When a transient driver refusal first stopped a pending job (SQLite; as on PostgreSQL).
ALTER TABLE job ADD COLUMN blocked_since TEXT;
