-- metadata.managedFields of a node group's MachineDeployment and the batch of its rolls
-- (SQLite; as on PostgreSQL).

ALTER TABLE nodegroup ADD COLUMN managed_fields TEXT NOT NULL DEFAULT '[]';
ALTER TABLE nodegroup ADD COLUMN max_surge INTEGER;
