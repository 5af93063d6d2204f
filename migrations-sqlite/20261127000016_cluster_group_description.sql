-- A cluster group's description, and clusters by name across projects (SQLite; as on
-- PostgreSQL).
ALTER TABLE cluster_group ADD COLUMN description VARCHAR(255);
CREATE INDEX ix_cluster_name_id ON cluster (name, id);
