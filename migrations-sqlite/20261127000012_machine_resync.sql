-- The PostgreSQL migration's re-sync: every node group ends with exactly its node_count
-- machines, named by the first backfill's rule (GLOB for the name test; the uuid is random
-- where PostgreSQL derives it).
WITH RECURSIVE seq(n) AS (
    SELECT 1
    UNION ALL
    SELECT n + 1 FROM seq WHERE n < (SELECT COALESCE(MAX(node_count), 0) FROM nodegroup)
),
wanted(nodegroup_id, cluster_id, name, n) AS (
    SELECT g.uuid, g.cluster_id,
           CASE WHEN g.name GLOB '[a-z0-9]*' AND g.name NOT GLOB '*[^-a-z0-9]*'
                     AND length(g.name) <= 240
                THEN g.name || '-' || s.n
                ELSE 'nodegroup-' || g.uuid || '-' || s.n END,
           s.n
    FROM nodegroup g JOIN seq s ON s.n <= g.node_count
)
DELETE FROM machine
WHERE NOT EXISTS (SELECT 1 FROM wanted w
                  WHERE w.nodegroup_id = machine.nodegroup_id AND w.name = machine.name);

WITH RECURSIVE seq(n) AS (
    SELECT 1
    UNION ALL
    SELECT n + 1 FROM seq WHERE n < (SELECT COALESCE(MAX(node_count), 0) FROM nodegroup)
),
wanted(g_id, name, n) AS (
    SELECT g.id,
           CASE WHEN g.name GLOB '[a-z0-9]*' AND g.name NOT GLOB '*[^-a-z0-9]*'
                     AND length(g.name) <= 240
                THEN g.name || '-' || s.n
                ELSE 'nodegroup-' || g.uuid || '-' || s.n END,
           s.n
    FROM nodegroup g JOIN seq s ON s.n <= g.node_count
)
INSERT INTO machine (uuid, name, role, project_id, cluster_id, nodegroup_id, spec, phase,
                     status, created_at)
SELECT lower(hex(randomblob(4)) || '-' || hex(randomblob(2)) || '-4'
             || substr(hex(randomblob(2)), 2) || '-'
             || substr('89ab', 1 + (abs(random()) % 4), 1) || substr(hex(randomblob(2)), 2)
             || '-' || hex(randomblob(6))),
       w.name,
       CASE WHEN g.role = 'master' THEN 'master' ELSE 'worker' END,
       g.project_id, g.cluster_id, g.uuid,
       json_object('flavor', g.flavor_id, 'osImage', g.image_id,
                   'taints', json(g.node_taints), 'labels', json(g.node_labels)),
       CASE WHEN g.status LIKE '%\_IN\_PROGRESS' ESCAPE '\' THEN 'Pending' ELSE 'Running' END,
       '{}', COALESCE(g.updated_at, g.created_at)
FROM wanted w JOIN nodegroup g ON g.id = w.g_id
WHERE NOT EXISTS (SELECT 1 FROM machine m WHERE m.cluster_id = g.cluster_id AND m.name = w.name)
ORDER BY g.id, w.n
ON CONFLICT DO NOTHING;
