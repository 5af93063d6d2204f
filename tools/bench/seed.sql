-- Seeds :n more clusters (two node groups each) into project 'bench' for the benchmark.
-- Expects the template row 'bench-template' to exist.
INSERT INTO cluster (uuid, project_id, user_id, name, cluster_template_id, status, labels,
                     health_status_reason, create_timeout, stack_id, api_address, created_at,
                     registry_name)
SELECT gen_random_uuid()::text, 'bench', 'bench-user', 'c' || (:offset + g),
       (SELECT uuid FROM cluster_template WHERE name = 'bench-template'),
       'CREATE_COMPLETE', '{"kube_tag": "v1.30.1"}', '{}', 60, 'fake-' || g,
       'https://10.0.0.' || (g % 250) || ':6443', now(), 'c' || (:offset + g)
FROM generate_series(1, :n) AS g;

INSERT INTO nodegroup (uuid, name, cluster_id, project_id, labels, node_addresses, node_count,
                       role, min_node_count, is_default, status, created_at)
SELECT gen_random_uuid()::text, r.name, c.uuid, 'bench', '{}',
       CASE WHEN r.role = 'master' THEN '["10.1.0.1"]'::jsonb ELSE '["10.2.0.1", "10.2.0.2"]'::jsonb END,
       CASE WHEN r.role = 'master' THEN 1 ELSE 2 END, r.role, 0, TRUE, 'CREATE_COMPLETE', now()
FROM cluster c
CROSS JOIN (VALUES ('default-master', 'master'), ('default-worker', 'worker')) AS r(name, role)
WHERE c.id > (SELECT COALESCE(MAX(id), 0) FROM cluster) - :n;
ANALYZE cluster;
ANALYZE nodegroup;
