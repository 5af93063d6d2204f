.timeout 30000
-- Seeds 1,000 clusters (two node groups each) into project 'bench' of the embedded SQLite
-- database, as seed.sql does on PostgreSQL. Expects the template row 'bench-template'.
WITH RECURSIVE g(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM g WHERE n < 1000)
INSERT INTO cluster (uuid, project_id, user_id, name, cluster_template_id, status, labels,
                     health_status_reason, create_timeout, stack_id, api_address, created_at,
                     registry_name)
SELECT lower(hex(randomblob(4)) || '-' || hex(randomblob(2)) || '-4' || substr(hex(randomblob(2)), 2)
             || '-a' || substr(hex(randomblob(2)), 2) || '-' || hex(randomblob(6))),
       'bench', 'bench-user', 'c' || n,
       (SELECT uuid FROM cluster_template WHERE name = 'bench-template'),
       'CREATE_COMPLETE', '{"kube_tag": "v1.30.1"}', '{}', 60, 'fake-' || n,
       'https://10.0.0.' || (n % 250) || ':6443', strftime('%Y-%m-%dT%H:%M:%fZ', 'now'),
       'c' || n
FROM g;

INSERT INTO nodegroup (uuid, name, cluster_id, project_id, labels, node_addresses, node_count,
                       role, min_node_count, is_default, status, created_at)
SELECT lower(hex(randomblob(4)) || '-' || hex(randomblob(2)) || '-4' || substr(hex(randomblob(2)), 2)
             || '-a' || substr(hex(randomblob(2)), 2) || '-' || hex(randomblob(6))),
       r.name, c.uuid, 'bench', '{}',
       CASE WHEN r.role = 'master' THEN '["10.1.0.1"]' ELSE '["10.2.0.1", "10.2.0.2"]' END,
       CASE WHEN r.role = 'master' THEN 1 ELSE 2 END, r.role, 0, 1, 'CREATE_COMPLETE',
       strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
FROM cluster c
CROSS JOIN (SELECT 'default-master' AS name, 'master' AS role
            UNION ALL SELECT 'default-worker', 'worker') AS r
WHERE c.project_id = 'bench';
ANALYZE;
