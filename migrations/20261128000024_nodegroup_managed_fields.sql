-- metadata.managedFields of a node group's MachineDeployment on the Kubernetes face, kept as a
-- machine's (20261128000022): which field manager owns which fields, a JSON array of
-- ManagedFieldsEntry objects in FieldsV1 form. And the batch (spec.strategy.rollingUpdate.
-- maxSurge) its rolls take when the write that starts one names none; NULL is 1.
-- Node groups keep no change log of their own: a write of these columns also updates the
-- cluster row, which moves the object's resourceVersion and wakes its watchers.

ALTER TABLE nodegroup ADD COLUMN managed_fields JSONB NOT NULL DEFAULT '[]'::jsonb;
ALTER TABLE nodegroup ADD COLUMN max_surge INTEGER;
