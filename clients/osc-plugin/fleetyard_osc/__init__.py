"""OpenStackClient plugin adding `openstack coe federation ...` for Fleetyard."""

__version__ = "0.1.0"
