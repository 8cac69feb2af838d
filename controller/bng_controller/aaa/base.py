"""What the session layer asks of AAA, and what it gets back.

The session layer (PPP authentication, accounting, CoA) speaks only these
types; the local subscriber file and RADIUS are two backends behind them.
Keeping RADIUS attribute names out of the session code is what lets an
operator switch backends by config alone.
"""
from __future__ import annotations

import enum
import ipaddress
from dataclasses import dataclass, field
from typing import Awaitable, Callable, Protocol


class AuthMethod(enum.Enum):
    PAP = "pap"
    CHAP_MD5 = "chap-md5"
    MSCHAPV2 = "mschapv2"


@dataclass(frozen=True)
class LineInfo:
    """Where a subscriber is attached: what RADIUS calls the NAS port.

    `circuit_id`/`remote_id` come from a PPPoE intermediate agent
    (TR-101 vendor tag), when the access network inserts one."""
    port: int
    s_vid: int = 0
    c_vid: int = 0
    line_id: int = 0
    circuit_id: str = ""
    remote_id: str = ""

    @property
    def nas_port_id(self) -> str:
        """The line as operators write it: circuit id if the access node
        gave one, else port:s-vid.c-vid."""
        if self.circuit_id:
            return self.circuit_id
        return f"{self.port}:{self.s_vid}.{self.c_vid}"


@dataclass
class AuthRequest:
    """One authentication attempt of a PPP peer.

    PAP carries the password; CHAP-MD5 carries identifier, challenge and the
    16-byte response; MS-CHAPv2 carries the authenticator challenge and the
    49-byte response (peer challenge 16, reserved 8, NT-response 24, flags 1)."""
    username: str
    method: AuthMethod
    client_mac: str
    line: LineInfo
    session_id: int                  # PPPoE session id
    password: bytes = b""
    chap_id: int = 0
    challenge: bytes = b""
    response: bytes = b""
    acct_session_id: str = ""        # known before auth, so RADIUS can log it


@dataclass
class TunnelSpec:
    """An L2TP tunnel a subscriber is to be switched into (RFC 2868
    Tunnel-* attributes, or the realm table of the local backend)."""
    server_endpoint: str             # LNS address
    password: bytes = b""            # tunnel secret
    client_auth_id: str = ""         # our hostname toward the LNS
    server_auth_id: str = ""
    preference: int = 0              # lower is preferred (RFC 2868 3.8)
    assignment_id: str = ""          # tunnels with equal ids are shared
    medium: str = "IPv4"


@dataclass
class AuthResult:
    accepted: bool
    reply_message: str = ""
    framed_ip: ipaddress.IPv4Address | None = None
    framed_pool: str | None = None
    dns: list[ipaddress.IPv4Address] = field(default_factory=list)
    framed_ipv6_prefix: ipaddress.IPv6Network | None = None       # RFC 3162, the WAN /64
    delegated_ipv6_prefix: ipaddress.IPv6Network | None = None    # RFC 4818, DHCPv6-PD
    session_timeout: int | None = None          # seconds
    idle_timeout: int | None = None             # seconds
    interim_interval: int | None = None         # Acct-Interim-Interval, seconds
    rate_up_kbps: int | None = None             # subscriber -> network policer
    rate_down_kbps: int | None = None           # network -> subscriber policer
    classes: tuple[bytes, ...] = ()             # every Class, echoed in accounting (RFC 2865 5.25)
    tunnels: list[TunnelSpec] = field(default_factory=list)       # LAC: switch, don't terminate
    mschapv2_success: bytes = b""               # "S=<authenticator response>" for the peer
    mppe_keys: tuple[bytes, bytes] | None = None


class AcctStatus(enum.Enum):
    START = 1
    STOP = 2
    INTERIM = 3


class TerminateCause(enum.IntEnum):
    """RFC 2866 5.10 Acct-Terminate-Cause values used by the BNG."""
    USER_REQUEST = 1
    LOST_CARRIER = 2
    LOST_SERVICE = 3
    IDLE_TIMEOUT = 4
    SESSION_TIMEOUT = 5
    ADMIN_RESET = 6
    ADMIN_REBOOT = 7
    PORT_ERROR = 8
    NAS_ERROR = 9
    NAS_REQUEST = 10
    NAS_REBOOT = 11
    SERVICE_UNAVAILABLE = 15
    USER_ERROR = 17


@dataclass
class SessionCounters:
    """Per-direction traffic of a session as the switch counted it
    (PPP payload bytes: what RADIUS calls octets)."""
    packets_in: int = 0     # from the subscriber (upstream)
    octets_in: int = 0
    packets_out: int = 0    # to the subscriber (downstream)
    octets_out: int = 0


@dataclass
class AcctRecord:
    status: AcctStatus
    acct_session_id: str
    username: str
    client_mac: str
    line: LineInfo
    session_id: int
    framed_ip: ipaddress.IPv4Address | None
    session_time: int = 0            # seconds since the session came up
    counters: SessionCounters = field(default_factory=SessionCounters)
    terminate_cause: TerminateCause | None = None
    classes: tuple[bytes, ...] = ()
    framed_ipv6_prefix: ipaddress.IPv6Network | None = None
    delegated_ipv6_prefix: ipaddress.IPv6Network | None = None
    event_time: float = 0.0          # wall clock of the event (Event-Timestamp)


class AaaBackend(Protocol):
    """Authentication and accounting. Implementations never raise for a
    peer's bad credentials (that is `accepted=False`); they raise
    `AaaUnavailable` when no server answered, so the session layer can tell
    a reject from an outage."""

    async def authenticate(self, req: AuthRequest) -> AuthResult: ...

    async def account(self, rec: AcctRecord) -> None: ...

    async def close(self) -> None: ...


class AaaUnavailable(Exception):
    """No AAA server answered within the configured retries."""


@dataclass
class DynAuthRequest:
    """A Disconnect-Request or CoA-Request (RFC 5176) after its
    authenticator was checked: the session identification attributes and,
    for CoA, the new authorization."""
    kind: str                                    # "disconnect" or "coa"
    acct_session_id: str | None = None
    username: str | None = None
    framed_ip: ipaddress.IPv4Address | None = None
    client_mac: str | None = None                # Calling-Station-Id
    nas_port_id: str | None = None
    nas_port: int | None = None                  # what our accounting sends: the line id
    framed_ipv6_prefix: ipaddress.IPv6Network | None = None
    new_auth: AuthResult | None = None           # CoA: what changes (rates, timeouts)


class DynAuthError(enum.IntEnum):
    """RFC 5176 3.5 Error-Cause values the BNG answers with."""
    RESIDUAL_SESSION_CONTEXT_REMOVED = 201
    UNSUPPORTED_ATTRIBUTE = 401
    MISSING_ATTRIBUTE = 402
    NAS_IDENTIFICATION_MISMATCH = 403
    INVALID_REQUEST = 404
    UNSUPPORTED_SERVICE = 405
    INVALID_ATTRIBUTE_VALUE = 407
    SESSION_CONTEXT_NOT_FOUND = 503
    SESSION_CONTEXT_NOT_REMOVABLE = 504
    RESOURCES_UNAVAILABLE = 506


# The session layer's answer to a DynAuthRequest: None = ACK, else NAK cause.
DynAuthHandler = Callable[[DynAuthRequest], Awaitable[DynAuthError | None]]
