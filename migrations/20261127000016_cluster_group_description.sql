-- A cluster group's description: free text its project writes (/v1/clustergroups), shown back
-- as written; NULL when none was given.
ALTER TABLE cluster_group ADD COLUMN description VARCHAR(255);

-- Clusters by name across projects: a list through cluster groups (the caller's project and
-- the clusters its bound groups reach) sorted by name walks this index and probes the groups,
-- instead of sorting every cluster the caller reaches.
CREATE INDEX ix_cluster_name_id ON cluster (name, id);
