-- The anchor of GET /v1/clusters?limit=100 (first page) for ./tox.sh bench: the statement the
-- service runs for that page (src/store/clusters.rs: CLUSTER_SUMMARY_COLUMNS, the columns the
-- summary view needs, over alias t, the node sums in correlated subqueries, keyset order on
-- id), as pgbench runs it (-M prepared). A unit test holds it equal to the service's own.
SELECT t.uuid, t.project_id, t.name, t.cluster_template_id, t.keypair, t.docker_volume_size, t.labels, t.master_flavor_id, t.flavor_id, t.stack_id, t.status, t.health_status, t.create_timeout,
       COALESCE((SELECT SUM(g.node_count) FROM nodegroup g WHERE g.cluster_id = t.uuid AND g.role <> 'master'), 0) AS worker_nodes,
       COALESCE((SELECT SUM(g.node_count) FROM nodegroup g WHERE g.cluster_id = t.uuid AND g.role = 'master'), 0) AS master_nodes
FROM cluster t WHERE t.project_id = 'bench' ORDER BY t.id ASC LIMIT 100;
