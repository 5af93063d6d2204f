-- metadata.managedFields of a registry cluster (SQLite; as on PostgreSQL).
ALTER TABLE cluster ADD COLUMN registry_managed_fields TEXT NOT NULL DEFAULT '[]';

-- The change log's snapshot of a cluster (20261127000002) shows its managed fields too.
DROP VIEW cluster_snapshot;
CREATE VIEW cluster_snapshot AS
SELECT c.id AS id, json_object(
    'id', c.id, 'uuid', c.uuid, 'project_id', c.project_id, 'user_id', c.user_id,
    'name', c.name, 'cluster_template_id', c.cluster_template_id, 'keypair', c.keypair,
    'docker_volume_size', c.docker_volume_size, 'labels', json(c.labels),
    'master_flavor_id', c.master_flavor_id, 'flavor_id', c.flavor_id,
    'stack_id', c.stack_id, 'api_address', c.api_address, 'status', c.status,
    'status_reason', c.status_reason, 'health_status', c.health_status,
    'health_status_reason', json(c.health_status_reason),
    'create_timeout', c.create_timeout, 'discovery_url', c.discovery_url,
    'coe_version', c.coe_version, 'container_version', c.container_version,
    'fixed_network', c.fixed_network, 'fixed_subnet', c.fixed_subnet,
    'floating_ip_enabled', json(CASE WHEN c.floating_ip_enabled THEN 'true' ELSE 'false' END),
    'master_lb_enabled', json(CASE WHEN c.master_lb_enabled THEN 'true' ELSE 'false' END),
    'version', c.version, 'created_at', c.created_at, 'updated_at', c.updated_at,
    'registry_labels', json(c.registry_labels),
    'registry_annotations', json(c.registry_annotations),
    'resource_version', c.resource_version, 'generation', c.generation,
    'server_endpoints', json(c.server_endpoints), 'ca_bundle', c.ca_bundle,
    'auth_info', json(c.auth_info), 'registry_finalizers', json(c.registry_finalizers),
    'registry_owner_references', json(c.registry_owner_references),
    'deletion_timestamp', c.deletion_timestamp,
    'deletion_grace_period_seconds', c.deletion_grace_period_seconds,
    'registry_conditions', json(c.registry_conditions),
    'registry_generate_name', c.registry_generate_name,
    'registry_name', c.registry_name,
    'registry_managed_fields', json(c.registry_managed_fields),
    'driver', (SELECT t.driver FROM cluster_template t WHERE t.uuid = c.cluster_template_id),
    'node_count', (SELECT SUM(n.node_count) FROM nodegroup n WHERE n.cluster_id = c.uuid),
    'ca_pem', COALESCE(c.ca_bundle, (SELECT k.certificate FROM x509keypair k
        WHERE k.cluster_uuid = c.uuid AND k.kind = 'ca' ORDER BY k.id DESC LIMIT 1)),
    'last_heartbeat', (SELECT p.last_probe_at FROM cluster_health_probe p
        WHERE p.cluster_uuid = c.uuid),
    'last_transition', (SELECT p.last_transition_at FROM cluster_health_probe p
        WHERE p.cluster_uuid = c.uuid)) AS object
FROM cluster c;
