-- The accepted members of a set of groups with their clusters' projects, read from the index
-- alone: a page of the registry through cluster groups first takes the projects the caller's
-- bound groups reach (these members' projects and the selecting groups' own projects), so that
-- it walks only those projects' clusters in (project, name) order; a /v1 list through groups
-- hashes the same members' clusters once.
CREATE INDEX ix_cluster_group_member_accepted
    ON cluster_group_member (group_id, cluster_id, cluster_project_id)
    WHERE state = 'Accepted';
