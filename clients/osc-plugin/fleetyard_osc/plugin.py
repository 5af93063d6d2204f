"""The OpenStackClient plugin module (entry point group `openstack.cli.extension`).

How it fits beside python-magnumclient:

* python-magnumclient registers API name ``container_infra`` and adds the global
  option ``--os-container-infra-api-version``. A second extension with the same
  API name would either add that option twice (argparse refuses: every
  ``openstack`` command would fail) or replace magnumclient's client object on
  the ClientManager, depending on load order. So this plugin registers its own
  API name, ``container_infra_federation``, and adds no option of its own.
* It reads the *same* option: ``API_VERSION_OPTION`` is magnumclient's, so
  ``--os-container-infra-api-version``, ``OS_CONTAINER_INFRA_API_VERSION`` and
  ``container_infra_api_version`` in clouds.yaml apply to both plugins, and the
  header sent is the same (``OpenStack-API-Version: container-infra latest`` by
  default, ``container-infra 1.10`` with ``1.10``).
* The commands themselves are entry points in magnumclient's command group
  (``openstack.container_infra.v1``), so they appear as ``coe federation ...``
  beside ``coe cluster ...``. No command name overlaps magnumclient's.
* The client uses the session OSC built from the ``--os-*`` options (auth type
  ``none``, ``admin_token``, ``password``, clouds.yaml, ``--os-endpoint``...),
  exactly as magnumclient's client does.
"""

import logging

LOG = logging.getLogger(__name__)

API_NAME = "container_infra_federation"
# magnumclient's option; this plugin reads it but does not add it (see above).
API_VERSION_OPTION = "os_container_infra_api_version"
DEFAULT_API_VERSION = "1"
API_VERSIONS = {"1": "fleetyard_osc.client.FederationClient"}


def check_api_version(version):
    """Accept what magnumclient accepts ("1", "latest", "1.N").

    Returning True skips OSC's "not in supported versions" warning for
    microversions such as "1.10"; the server is the judge of them.
    """
    return True


def make_client(instance):
    """Build the federation client from the ClientManager (called lazily)."""
    from fleetyard_osc import client

    requested = str(instance._api_version.get(API_NAME) or DEFAULT_API_VERSION)
    LOG.debug("Instantiating the federation client, API version %s", requested)
    return client.FederationClient(
        session=instance.session,
        region_name=instance.region_name,
        interface=instance.interface,
        api_version=client.header_version(requested),
    )


def build_option_parser(parser):
    """Adds nothing: --os-container-infra-api-version is magnumclient's option.

    Adding it here too would make argparse refuse the second definition (and
    which plugin loads first is not fixed), so this plugin only reads it.
    """
    return parser
