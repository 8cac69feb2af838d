"""The RADIUS dictionary of the controller and the names used in code.

The dictionary itself is package data (`data/dictionary`, FreeRADIUS
syntax, read by pyrad). The attribute names live here as constants so that
a typo is an AttributeError at import time rather than a KeyError from pyrad
on the first subscriber, and so that there is one place to grep for "which
attributes do we speak".
"""
from __future__ import annotations

import enum
import functools
import io
from importlib import resources

from pyrad.dictionary import Dictionary
from pyrad.packet import Packet

_DATA_PACKAGE = __package__
_DICTIONARY_FILE = ("data", "dictionary")


@functools.lru_cache(maxsize=1)
def load_dictionary() -> Dictionary:
    """Parse the packaged dictionary once; pyrad dictionaries are read-only
    after parsing, so every packet can share the same instance."""
    ref = resources.files(_DATA_PACKAGE).joinpath(*_DICTIONARY_FILE)
    return Dictionary(io.StringIO(ref.read_text(encoding="utf-8")))


class Attr:
    """Attribute names as spelled in `data/dictionary`."""
    USER_NAME = "User-Name"
    USER_PASSWORD = "User-Password"
    CHAP_PASSWORD = "CHAP-Password"
    CHAP_CHALLENGE = "CHAP-Challenge"
    NAS_IP_ADDRESS = "NAS-IP-Address"
    NAS_IPV6_ADDRESS = "NAS-IPv6-Address"
    NAS_IDENTIFIER = "NAS-Identifier"
    NAS_PORT = "NAS-Port"
    NAS_PORT_ID = "NAS-Port-Id"
    NAS_PORT_TYPE = "NAS-Port-Type"
    SERVICE_TYPE = "Service-Type"
    FRAMED_PROTOCOL = "Framed-Protocol"
    FRAMED_IP_ADDRESS = "Framed-IP-Address"
    FRAMED_IP_NETMASK = "Framed-IP-Netmask"
    FRAMED_POOL = "Framed-Pool"
    FRAMED_IPV6_PREFIX = "Framed-IPv6-Prefix"
    FRAMED_IPV6_POOL = "Framed-IPv6-Pool"
    FRAMED_INTERFACE_ID = "Framed-Interface-Id"
    DELEGATED_IPV6_PREFIX = "Delegated-IPv6-Prefix"
    FILTER_ID = "Filter-Id"
    REPLY_MESSAGE = "Reply-Message"
    STATE = "State"
    CLASS = "Class"
    SESSION_TIMEOUT = "Session-Timeout"
    IDLE_TIMEOUT = "Idle-Timeout"
    TERMINATION_ACTION = "Termination-Action"
    CALLED_STATION_ID = "Called-Station-Id"
    CALLING_STATION_ID = "Calling-Station-Id"
    PROXY_STATE = "Proxy-State"
    EVENT_TIMESTAMP = "Event-Timestamp"
    MESSAGE_AUTHENTICATOR = "Message-Authenticator"
    ACCT_INTERIM_INTERVAL = "Acct-Interim-Interval"
    ERROR_CAUSE = "Error-Cause"
    CHARGEABLE_USER_IDENTITY = "Chargeable-User-Identity"

    ACCT_STATUS_TYPE = "Acct-Status-Type"
    ACCT_DELAY_TIME = "Acct-Delay-Time"
    ACCT_SESSION_ID = "Acct-Session-Id"
    ACCT_MULTI_SESSION_ID = "Acct-Multi-Session-Id"
    ACCT_AUTHENTIC = "Acct-Authentic"
    ACCT_SESSION_TIME = "Acct-Session-Time"
    ACCT_INPUT_OCTETS = "Acct-Input-Octets"
    ACCT_OUTPUT_OCTETS = "Acct-Output-Octets"
    ACCT_INPUT_GIGAWORDS = "Acct-Input-Gigawords"
    ACCT_OUTPUT_GIGAWORDS = "Acct-Output-Gigawords"
    ACCT_INPUT_PACKETS = "Acct-Input-Packets"
    ACCT_OUTPUT_PACKETS = "Acct-Output-Packets"
    ACCT_TERMINATE_CAUSE = "Acct-Terminate-Cause"

    TUNNEL_TYPE = "Tunnel-Type"
    TUNNEL_MEDIUM_TYPE = "Tunnel-Medium-Type"
    TUNNEL_CLIENT_ENDPOINT = "Tunnel-Client-Endpoint"
    TUNNEL_SERVER_ENDPOINT = "Tunnel-Server-Endpoint"
    TUNNEL_PASSWORD = "Tunnel-Password"
    TUNNEL_PRIVATE_GROUP_ID = "Tunnel-Private-Group-Id"
    TUNNEL_ASSIGNMENT_ID = "Tunnel-Assignment-Id"
    TUNNEL_PREFERENCE = "Tunnel-Preference"
    TUNNEL_CLIENT_AUTH_ID = "Tunnel-Client-Auth-Id"
    TUNNEL_SERVER_AUTH_ID = "Tunnel-Server-Auth-Id"

    MS_CHAP_CHALLENGE = "MS-CHAP-Challenge"
    MS_CHAP2_RESPONSE = "MS-CHAP2-Response"
    MS_CHAP2_SUCCESS = "MS-CHAP2-Success"
    MS_CHAP_ERROR = "MS-CHAP-Error"
    MS_MPPE_SEND_KEY = "MS-MPPE-Send-Key"
    MS_MPPE_RECV_KEY = "MS-MPPE-Recv-Key"
    MS_PRIMARY_DNS = "MS-Primary-DNS-Server"
    MS_SECONDARY_DNS = "MS-Secondary-DNS-Server"

    AGENT_CIRCUIT_ID = "ADSL-Agent-Circuit-Id"
    AGENT_REMOTE_ID = "ADSL-Agent-Remote-Id"


class ServiceType(enum.IntEnum):
    FRAMED_USER = 2
    AUTHORIZE_ONLY = 17     # RFC 5176 3.2


class FramedProtocol(enum.IntEnum):
    PPP = 1


class NasPortType(enum.IntEnum):
    """RFC 2865 5.41; a PPPoE BNG reports Virtual or Ethernet."""
    VIRTUAL = 5
    ETHERNET = 15


class AcctStatusType(enum.IntEnum):
    START = 1
    STOP = 2
    INTERIM_UPDATE = 3
    ACCOUNTING_ON = 7
    ACCOUNTING_OFF = 8


class AcctAuthentic(enum.IntEnum):
    RADIUS = 1
    LOCAL = 2


class TunnelType(enum.IntEnum):
    L2TP = 3


class TunnelMediumType(enum.IntEnum):
    IPV4 = 1
    IPV6 = 2


# Framed-IP-Address values that are not an address (RFC 2865 5.8).
FRAMED_IP_USER_CHOOSES = "255.255.255.255"
FRAMED_IP_NAS_CHOOSES = "255.255.255.254"


def int_value(pkt: Packet, name: str, default: int | None = None) -> int | None:
    """The first value of an integer attribute as a number.

    pyrad decodes an integer that has a VALUE name to that name; code
    compares numbers, so names are mapped back through the dictionary."""
    values = pkt.get(name)
    if not values:
        return default
    value = values[0]
    if isinstance(value, int):
        return value
    names = pkt.dict.attributes[name.partition(":")[0]].values
    if names.HasForward(value):
        encoded = names.GetForward(value)   # pyrad keeps the encoded octets
        return int.from_bytes(encoded, "big") if isinstance(encoded, bytes) else int(encoded)
    return int(value)


def first(pkt: Packet, name: str):
    """The first value of an attribute, or None when absent."""
    values = pkt.get(name)
    return values[0] if values else None
