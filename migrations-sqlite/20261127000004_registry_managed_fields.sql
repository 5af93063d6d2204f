-- metadata.managedFields of a registry cluster (SQLite; as on PostgreSQL).
ALTER TABLE cluster ADD COLUMN registry_managed_fields TEXT NOT NULL DEFAULT '[]';
