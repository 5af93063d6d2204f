-- The anchor of GET /v1/clusters/detail?limit=100 (first page) for ./tox.sh bench: the
-- statement the service runs for that page (src/store/clusters.rs: CLUSTER_COLUMNS over alias
-- t, the node groups' facts as one JSON array and the template's labels in correlated
-- subqueries, keyset order on id), as pgbench runs it (-M prepared). A unit test holds it
-- equal to the service's own.
SELECT t.id, t.uuid, t.project_id, t.user_id, t.name, t.cluster_template_id, t.keypair, t.docker_volume_size, t.labels, t.master_flavor_id, t.flavor_id, t.stack_id, t.api_address, t.status, t.status_reason, t.health_status, t.health_status_reason, t.create_timeout, t.discovery_url, t.coe_version, t.container_version, t.fixed_network, t.fixed_subnet, t.floating_ip_enabled, t.master_lb_enabled, t.version, t.created_at, t.updated_at, t.registry_labels, t.registry_annotations, t.resource_version, t.generation, t.server_endpoints, t.ca_bundle, t.auth_info, t.registry_finalizers, t.registry_owner_references, t.deletion_timestamp, t.deletion_grace_period_seconds, t.registry_conditions, t.registry_generate_name, t.registry_managed_fields, t.registry_name,
       COALESCE((SELECT json_agg(json_build_object('name', g.name, 'role', g.role, 'node_count', g.node_count, 'node_addresses', g.node_addresses, 'status', g.status, 'status_reason', g.status_reason) ORDER BY g.id) FROM nodegroup g WHERE g.cluster_id = t.uuid), '[]'::json) AS group_facts,
       (SELECT ct.labels FROM cluster_template ct WHERE ct.uuid = t.cluster_template_id) AS template_labels
FROM cluster t WHERE t.project_id = 'bench' ORDER BY t.id ASC LIMIT 100;
