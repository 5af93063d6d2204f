-- A cluster group's description (SQLite; as on PostgreSQL).
ALTER TABLE cluster_group ADD COLUMN description VARCHAR(255);
