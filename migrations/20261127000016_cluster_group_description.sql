-- A cluster group's description: free text its project writes (/v1/clustergroups), shown back
-- as written; NULL when none was given.
ALTER TABLE cluster_group ADD COLUMN description VARCHAR(255);
