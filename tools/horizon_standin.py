"""A read-only stand-in for Nova, Glance and Neutron, for tools/horizon_check.py.

Horizon's Container Infra create forms read flavors, keypairs and availability zones from Nova,
images from Glance and networks from Neutron; Fleetyard itself never calls them. This one
threaded HTTP server answers the GET requests Horizon 26 + magnum-ui 19 make, with a fixed
small cloud: flavors m1.medium and m1.large, keypair `default`, availability zone `nova`, a
Fedora CoreOS image (os_distro fedora-coreos, the distros magnum-ui lists), an external network
`public` and a private network with one subnet. It is registered in Keystone's catalog as
`compute` (/compute/v2.1), `image` (/image) and `network` (/network). Anything else is a 404
that is recorded in `unknown`, and every request in `seen`.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

IMAGE_ID = "3f5b8a3e-5d0c-4d7e-9a55-9c1f0c4b6d01"
PUBLIC_NET = "7d3a1c52-1d4b-4a37-8d0e-6f3f0a2b9e11"
PRIVATE_NET = "2c9e5f70-8b1a-4e6d-9f3c-0a7b6d5e4c21"
PRIVATE_SUBNET = "9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c31"
PUBLIC_SUBNET = "1b2c3d4e-5f6a-4b7c-8d9e-0f1a2b3c4d41"
STAMP = "2026-01-01T00:00:00Z"

FLAVORS = [
    {"id": "3", "name": "m1.medium", "ram": 4096, "vcpus": 2, "disk": 40},
    {"id": "4", "name": "m1.large", "ram": 8192, "vcpus": 4, "disk": 80},
]


def flavor(f: dict[str, Any], base: str) -> dict[str, Any]:
    return {**f, "OS-FLV-EXT-DATA:ephemeral": 0, "OS-FLV-DISABLED:disabled": False, "swap": 0,
            "rxtx_factor": 1.0, "os-flavor-access:is_public": True, "description": None,
            "extra_specs": {},
            "links": [{"rel": "self", "href": "%s/compute/v2.1/flavors/%s" % (base, f["id"])}]}


def image(base: str) -> dict[str, Any]:
    return {"id": IMAGE_ID, "name": "fedora-coreos-40", "status": "active", "visibility": "public",
            "os_distro": "fedora-coreos", "disk_format": "qcow2", "container_format": "bare",
            "min_disk": 0, "min_ram": 0, "size": 1073741824, "virtual_size": None,
            "checksum": None, "os_hash_algo": None, "os_hash_value": None,
            "created_at": STAMP, "updated_at": STAMP, "owner": "admin", "protected": False,
            "os_hidden": False, "tags": [], "self": "/v2/images/" + IMAGE_ID,
            "file": "/v2/images/%s/file" % IMAGE_ID, "schema": "/v2/schemas/image"}


IMAGE_SCHEMA = {
    "name": "image",
    "properties": {
        "id": {"type": "string"}, "name": {"type": ["null", "string"]},
        "status": {"type": "string"}, "visibility": {"type": "string"},
        "protected": {"type": "boolean"}, "os_hidden": {"type": "boolean"},
        "checksum": {"type": ["null", "string"]}, "os_hash_algo": {"type": ["null", "string"]},
        "os_hash_value": {"type": ["null", "string"]}, "owner": {"type": ["null", "string"]},
        "size": {"type": ["null", "integer"]}, "virtual_size": {"type": ["null", "integer"]},
        "container_format": {"type": ["null", "string"],
                             "enum": [None, "ami", "ari", "aki", "bare", "ovf", "ova", "docker"]},
        "disk_format": {"type": ["null", "string"],
                        "enum": [None, "ami", "ari", "aki", "vhd", "vhdx", "vmdk", "raw", "qcow2",
                                 "vdi", "iso", "ploop"]},
        "created_at": {"type": "string"}, "updated_at": {"type": "string"},
        "tags": {"type": "array", "items": {"type": "string"}},
        "min_ram": {"type": "integer"}, "min_disk": {"type": "integer"},
        "self": {"type": "string"}, "file": {"type": "string"}, "schema": {"type": "string"},
        "os_distro": {"type": "string"},
    },
    "additionalProperties": {"type": "string"},
    "links": [{"href": "{self}", "rel": "self"}, {"href": "{file}", "rel": "enclosure"},
              {"href": "{schema}", "rel": "describedby"}],
}


def networks(project: str) -> list[dict[str, Any]]:
    common = {"status": "ACTIVE", "admin_state_up": True, "mtu": 1500, "availability_zones": ["nova"],
              "availability_zone_hints": [], "tags": [], "description": "", "port_security_enabled": True,
              "created_at": STAMP, "updated_at": STAMP, "revision_number": 1, "ipv4_address_scope": None,
              "ipv6_address_scope": None, "provider:network_type": "flat", "is_default": False}
    return [
        {**common, "id": PUBLIC_NET, "name": "public", "shared": False, "router:external": True,
         "subnets": [PUBLIC_SUBNET], "project_id": "admin", "tenant_id": "admin"},
        {**common, "id": PRIVATE_NET, "name": "private", "shared": False, "router:external": False,
         "subnets": [PRIVATE_SUBNET], "project_id": project, "tenant_id": project},
    ]


def subnets(project: str) -> list[dict[str, Any]]:
    def one(sid: str, net: str, name: str, cidr: str, owner: str) -> dict[str, Any]:
        return {"id": sid, "name": name, "network_id": net, "cidr": cidr, "ip_version": 4,
                "gateway_ip": cidr.rsplit(".", 1)[0] + ".1", "enable_dhcp": True,
                "allocation_pools": [{"start": cidr.rsplit(".", 1)[0] + ".2",
                                      "end": cidr.rsplit(".", 1)[0] + ".254"}],
                "dns_nameservers": [], "host_routes": [], "project_id": owner, "tenant_id": owner,
                "ipv6_ra_mode": None, "ipv6_address_mode": None, "subnetpool_id": None,
                "description": "", "tags": [], "created_at": STAMP, "updated_at": STAMP,
                "revision_number": 1, "service_types": [], "segment_id": None}
    return [one(PUBLIC_SUBNET, PUBLIC_NET, "public-subnet", "172.24.4.0/24", "admin"),
            one(PRIVATE_SUBNET, PRIVATE_NET, "private-subnet", "10.0.0.0/24", project)]


def matches(item: dict[str, Any], query: dict[str, list[str]]) -> bool:
    """Neutron's filters: every query field that names an attribute of the item must match."""
    for key, values in query.items():
        if key not in item or key in ("fields",):
            continue
        value = item[key]
        text = str(value).lower() if isinstance(value, bool) else str(value)
        if not any(text == (v.lower() if isinstance(value, bool) else v) for v in values):
            return False
    return True


class StandIn:
    def __init__(self) -> None:
        self.seen: list[str] = []
        self.unknown: list[str] = []
        stand_in = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def answer(self, status: int, body: Any) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:  # noqa: N802
                stand_in.seen.append("GET " + self.path)
                base = "http://%s" % self.headers.get("Host", "127.0.0.1")
                parts = urlsplit(self.path)
                found = stand_in.route(parts.path.rstrip("/"), parse_qs(parts.query), base)
                if found is None:
                    stand_in.unknown.append("GET " + self.path)
                    self.answer(404, {"error": {"message": "not in the stand-in", "code": 404}})
                else:
                    self.answer(200, found)

            def refuse(self) -> None:
                stand_in.seen.append("%s %s" % (self.command, self.path))
                stand_in.unknown.append("%s %s" % (self.command, self.path))
                length = int(self.headers.get("Content-Length") or 0)
                if length:
                    self.rfile.read(length)
                self.answer(405, {"error": {"message": "the stand-in is read-only", "code": 405}})

            do_POST = do_PUT = do_PATCH = do_DELETE = refuse

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def base(self) -> str:
        return "http://127.0.0.1:%d" % self.server.server_address[1]

    def start(self) -> None:
        self.thread.start()

    def stop(self) -> None:
        if self.thread.is_alive():  # shutdown() waits for serve_forever, forever if it never ran
            self.server.shutdown()
        self.server.server_close()

    def route(self, path: str, query: dict[str, list[str]], base: str) -> Any:
        compute = "/compute/v2.1"
        if path in ("/compute", compute):
            version = {"id": "v2.1", "status": "CURRENT", "version": "2.95", "min_version": "2.1",
                       "updated": "2013-07-23T11:33:21Z",
                       "links": [{"rel": "self", "href": base + compute + "/"}]}
            return {"version": version} if path == compute else {"versions": [version]}
        if path.startswith(compute + "/"):
            rest = path[len(compute):]
            if rest in ("/flavors/detail", "/flavors"):
                return {"flavors": [flavor(f, base) for f in FLAVORS]}
            for f in FLAVORS:
                if rest == "/flavors/" + f["id"]:
                    return {"flavor": flavor(f, base)}
                if rest == "/flavors/%s/os-extra_specs" % f["id"]:
                    return {"extra_specs": {}}
            if rest == "/os-keypairs":
                return {"keypairs": [{"keypair": {"name": "default", "type": "ssh",
                                                  "fingerprint": "00:11:22:33:44:55:66:77:88:99:aa:bb:cc:dd:ee:ff",
                                                  "public_key": "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIKs+fleetyard+stand+in test"}}]}
            if rest == "/os-availability-zone":
                return {"availabilityZoneInfo": [{"zoneName": "nova", "zoneState": {"available": True},
                                                  "hosts": None}]}
            if rest == "/limits":
                return {"limits": {"rate": [], "absolute": {
                    "maxTotalInstances": 20, "maxTotalCores": 40, "maxTotalRAMSize": 102400,
                    "maxTotalKeypairs": 10, "maxServerMeta": 128, "maxImageMeta": 128,
                    "maxPersonality": 5, "maxPersonalitySize": 10240, "maxServerGroups": 10,
                    "maxServerGroupMembers": 10, "totalInstancesUsed": 0, "totalCoresUsed": 0,
                    "totalRAMUsed": 0, "totalServerGroupsUsed": 0, "totalFloatingIpsUsed": 0,
                    "maxTotalFloatingIps": 10, "maxSecurityGroups": 10, "totalSecurityGroupsUsed": 0,
                    "maxSecurityGroupRules": 20}}}
            if rest.startswith("/os-simple-tenant-usage"):
                return {"tenant_usage": {}} if rest.count("/") > 1 else {"tenant_usages": []}
            if rest in ("/servers/detail", "/servers"):
                return {"servers": []}
            return None
        if path in ("/image", "/image/v2"):
            return {"versions": [{"id": "v2.16", "status": "CURRENT",
                                  "links": [{"rel": "self", "href": base + "/image/v2/"}]}]}
        if path == "/image/v2/schemas/image":
            return IMAGE_SCHEMA
        if path == "/image/v2/images":
            return {"images": [image(base)], "first": "/v2/images", "schema": "/v2/schemas/images"}
        if path == "/image/v2/images/" + IMAGE_ID:
            return image(base)
        if path in ("/network", "/network/v2.0"):
            if path == "/network":
                return {"versions": [{"id": "v2.0", "status": "CURRENT",
                                      "links": [{"rel": "self", "href": base + "/network/v2.0/"}]}]}
            return {"resources": []}
        if path == "/network/v2.0/extensions":
            return {"extensions": []}
        project = (query.get("project_id") or query.get("tenant_id") or ["project"])[0]
        if path == "/network/v2.0/networks":
            return {"networks": [n for n in networks(project) if matches(n, query)]}
        if path == "/network/v2.0/subnets":
            return {"subnets": [s for s in subnets(project) if matches(s, query)]}
        for kind, items in (("network", networks(project)), ("subnet", subnets(project))):
            for item in items:
                if path == "/network/v2.0/%ss/%s" % (kind, item["id"]):
                    return {kind: item}
        if path in ("/network/v2.0/ports", "/network/v2.0/routers", "/network/v2.0/floatingips",
                    "/network/v2.0/security-groups"):
            name = path.rsplit("/", 1)[1].replace("-", "_")
            return {name: []}
        return None
