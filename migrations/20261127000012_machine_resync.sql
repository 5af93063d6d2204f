-- Node groups made or resized after the machines were first backfilled get their machines:
-- every node group ends with exactly its node_count machines, named <group>-1 ... <group>-N
-- (nodegroup-<uuid>-<n> for a name that is not lower-case letters, digits and '-'), by the
-- rule of the first backfill. Machines past the count go; missing ones are made, Pending
-- while their group is in progress, else Running. From here on, the writes of the node
-- groups keep the count and the machines together.
DELETE FROM machine m
USING nodegroup g
WHERE m.nodegroup_id = g.uuid
  AND NOT EXISTS (
      SELECT 1 FROM generate_series(1, g.node_count) AS n
      WHERE m.name = CASE WHEN g.name ~ '^[a-z0-9][-a-z0-9]*$' AND length(g.name) <= 240
                          THEN g.name || '-' || n::text
                          ELSE 'nodegroup-' || g.uuid || '-' || n::text END);

INSERT INTO machine (uuid, name, role, project_id, cluster_id, nodegroup_id, spec, phase,
                     status, created_at)
SELECT md5(g.uuid || '/resync/' || n::text)::uuid::text,
       x.name,
       CASE WHEN g.role = 'master' THEN 'master' ELSE 'worker' END,
       g.project_id, g.cluster_id, g.uuid,
       jsonb_build_object('flavor', g.flavor_id, 'osImage', g.image_id,
                          'taints', g.node_taints, 'labels', g.node_labels),
       CASE WHEN g.status LIKE '%\_IN\_PROGRESS' THEN 'Pending' ELSE 'Running' END,
       '{}'::jsonb, COALESCE(g.updated_at, g.created_at)
FROM nodegroup g
CROSS JOIN LATERAL generate_series(1, g.node_count) AS n
CROSS JOIN LATERAL (
    SELECT CASE WHEN g.name ~ '^[a-z0-9][-a-z0-9]*$' AND length(g.name) <= 240
                THEN g.name || '-' || n::text
                ELSE 'nodegroup-' || g.uuid || '-' || n::text END AS name
) AS x
WHERE NOT EXISTS (SELECT 1 FROM machine m WHERE m.cluster_id = g.cluster_id AND m.name = x.name)
ORDER BY g.id, n
ON CONFLICT DO NOTHING;
