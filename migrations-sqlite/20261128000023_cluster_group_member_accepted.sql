-- The accepted members of a set of groups with their clusters' projects, from the index alone
-- (SQLite; as on PostgreSQL).
CREATE INDEX ix_cluster_group_member_accepted
    ON cluster_group_member (group_id, cluster_id, cluster_project_id)
    WHERE state = 'Accepted';
