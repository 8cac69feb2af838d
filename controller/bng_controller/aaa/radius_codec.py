"""Between the session layer's types (base.py) and RADIUS attributes.

Pure functions over pyrad packets, no I/O: which attributes an
Access-Request or Accounting-Request carries, and what an Access-Accept (or
a CoA-Request) means for the session. Kept apart from the transport so the
mapping can be tested without sockets and reused by the dynamic
authorization server.
"""
from __future__ import annotations

import ipaddress
import logging
import time
from dataclasses import dataclass

from pyrad import packet as rp

from .base import (AcctRecord, AcctStatus, AuthMethod, AuthRequest, AuthResult, LineInfo,
                   TunnelSpec)
from .chap_verify import MSCHAPV2_RESPONSE_LEN
from .raddict import (FRAMED_IP_NAS_CHOOSES, FRAMED_IP_USER_CHOOSES, AcctAuthentic,
                      AcctStatusType, Attr, FramedProtocol, NasPortType, ServiceType,
                      TunnelMediumType, TunnelType, first, int_value, load_dictionary)
from .rates import rates_from_filter_ids

log = logging.getLogger(__name__)

_U32 = 1 << 32
_MAX_TAG = 0x1F
_ACCT_STATUS = {
    AcctStatus.START: AcctStatusType.START,
    AcctStatus.STOP: AcctStatusType.STOP,
    AcctStatus.INTERIM: AcctStatusType.INTERIM_UPDATE,
}


@dataclass(frozen=True)
class NasIdentity:
    """How the BNG names itself in every request (RFC 2865 5.4/5.32)."""
    nas_identifier: str
    nas_ip_address: str | None = None
    nas_port_type: NasPortType = NasPortType.VIRTUAL


# ------------------------------------------------------------------ requests

def _add_nas(pkt: rp.Packet, nas: NasIdentity) -> None:
    if nas.nas_identifier:
        pkt[Attr.NAS_IDENTIFIER] = nas.nas_identifier
    if nas.nas_ip_address:
        pkt[Attr.NAS_IP_ADDRESS] = nas.nas_ip_address


def _add_line(pkt: rp.Packet, line: LineInfo, client_mac: str, nas: NasIdentity) -> None:
    """The subscriber's port: NAS-Port is the line id the session layer
    numbers lines with, NAS-Port-Id the operator's spelling, plus the
    TR-101 agent ids when the access node inserted them (RFC 4679)."""
    pkt[Attr.NAS_PORT] = line.line_id
    pkt[Attr.NAS_PORT_ID] = line.nas_port_id
    pkt[Attr.NAS_PORT_TYPE] = int(nas.nas_port_type)
    if client_mac:
        pkt[Attr.CALLING_STATION_ID] = client_mac
    if line.circuit_id:
        pkt[Attr.AGENT_CIRCUIT_ID] = line.circuit_id.encode()
    if line.remote_id:
        pkt[Attr.AGENT_REMOTE_ID] = line.remote_id.encode()


def build_access_request(req: AuthRequest, *, ident: int, secret: bytes,
                         nas: NasIdentity) -> rp.AuthPacket:
    """An Access-Request for one PPP authentication attempt.

    It always carries a Message-Authenticator (RFC 3579 3.2; BlastRADIUS,
    CVE-2024-3596), computed by pyrad when the packet is encoded."""
    pkt = rp.AuthPacket(code=rp.AccessRequest, id=ident, secret=secret,
                        authenticator=rp.Packet.CreateAuthenticator(),
                        dict=load_dictionary(), message_authenticator=True)
    pkt[Attr.USER_NAME] = req.username
    if req.method is AuthMethod.PAP:
        pkt[Attr.USER_PASSWORD] = pkt.PwCrypt(req.password)
    elif req.method is AuthMethod.CHAP_MD5:
        pkt[Attr.CHAP_PASSWORD] = bytes([req.chap_id & 0xFF]) + req.response
        pkt[Attr.CHAP_CHALLENGE] = req.challenge
    elif req.method is AuthMethod.MSCHAPV2:
        # RFC 2548 2.3.2: Ident, Flags, Peer-Challenge, Reserved, Response;
        # PPP carries the same fields as Peer-Challenge, Reserved, Response, Flags.
        resp = req.response
        if len(resp) != MSCHAPV2_RESPONSE_LEN:
            raise ValueError(f"MS-CHAPv2 response must be {MSCHAPV2_RESPONSE_LEN} octets, "
                             f"got {len(resp)}")
        flags = resp[MSCHAPV2_RESPONSE_LEN - 1]
        pkt[Attr.MS_CHAP_CHALLENGE] = req.challenge
        pkt[Attr.MS_CHAP2_RESPONSE] = bytes([req.chap_id & 0xFF, flags]) + resp[:-1]
    else:  # pragma: no cover - enum is closed
        raise ValueError(f"unsupported auth method {req.method}")
    _add_nas(pkt, nas)
    _add_line(pkt, req.line, req.client_mac, nas)
    pkt[Attr.SERVICE_TYPE] = int(ServiceType.FRAMED_USER)
    pkt[Attr.FRAMED_PROTOCOL] = int(FramedProtocol.PPP)
    if req.acct_session_id:
        pkt[Attr.ACCT_SESSION_ID] = req.acct_session_id
    return pkt


def split_counter(value: int) -> tuple[int, int]:
    """`(low 32 bits, gigawords)` of a 64-bit octet counter (RFC 2869 5.1)."""
    value = max(0, int(value))
    return value % _U32, (value // _U32) % _U32


def build_accounting_request(rec: AcctRecord, *, ident: int, secret: bytes, nas: NasIdentity,
                             delay: int) -> rp.AcctPacket:
    """An Accounting-Request for a session event. `delay` is how long the
    record has waited so far (Acct-Delay-Time, RFC 2866 5.2); the Request
    Authenticator is computed by pyrad when the packet is encoded."""
    pkt = rp.AcctPacket(code=rp.AccountingRequest, id=ident, secret=secret,
                        dict=load_dictionary())
    pkt[Attr.ACCT_STATUS_TYPE] = int(_ACCT_STATUS[rec.status])
    pkt[Attr.ACCT_SESSION_ID] = rec.acct_session_id
    if rec.username:
        pkt[Attr.USER_NAME] = rec.username
    _add_nas(pkt, nas)
    _add_line(pkt, rec.line, rec.client_mac, nas)
    pkt[Attr.SERVICE_TYPE] = int(ServiceType.FRAMED_USER)
    pkt[Attr.FRAMED_PROTOCOL] = int(FramedProtocol.PPP)
    pkt[Attr.ACCT_AUTHENTIC] = int(AcctAuthentic.RADIUS)
    if rec.framed_ip is not None:
        pkt[Attr.FRAMED_IP_ADDRESS] = str(rec.framed_ip)
    if rec.framed_ipv6_prefix is not None:
        pkt[Attr.FRAMED_IPV6_PREFIX] = str(rec.framed_ipv6_prefix)
    if rec.delegated_ipv6_prefix is not None:
        pkt[Attr.DELEGATED_IPV6_PREFIX] = str(rec.delegated_ipv6_prefix)
    for klass in rec.classes:               # each one, unmodified, in order (RFC 2865 5.25)
        pkt.AddAttribute(Attr.CLASS, klass)
    if rec.status is not AcctStatus.START:
        # RFC 2866: counters and session time belong to Interim and Stop.
        c = rec.counters
        in_low, in_giga = split_counter(c.octets_in)
        out_low, out_giga = split_counter(c.octets_out)
        pkt[Attr.ACCT_SESSION_TIME] = max(0, int(rec.session_time))
        pkt[Attr.ACCT_INPUT_OCTETS] = in_low
        pkt[Attr.ACCT_INPUT_GIGAWORDS] = in_giga
        pkt[Attr.ACCT_OUTPUT_OCTETS] = out_low
        pkt[Attr.ACCT_OUTPUT_GIGAWORDS] = out_giga
        pkt[Attr.ACCT_INPUT_PACKETS] = split_counter(c.packets_in)[0]
        pkt[Attr.ACCT_OUTPUT_PACKETS] = split_counter(c.packets_out)[0]
    if rec.status is AcctStatus.STOP and rec.terminate_cause is not None:
        pkt[Attr.ACCT_TERMINATE_CAUSE] = int(rec.terminate_cause)
    pkt[Attr.EVENT_TIMESTAMP] = int(rec.event_time or time.time())
    pkt[Attr.ACCT_DELAY_TIME] = max(0, int(delay))
    return pkt


def build_accounting_onoff(status: AcctStatusType, *, ident: int, secret: bytes,
                           nas: NasIdentity, acct_session_id: str, event_time: float,
                           delay: int, terminate_cause: int | None = None) -> rp.AcctPacket:
    """Accounting-On/Off (RFC 2866 5.1, status 7/8): tells the server that
    every session this NAS had open is gone, on start and on stop."""
    pkt = rp.AcctPacket(code=rp.AccountingRequest, id=ident, secret=secret,
                        dict=load_dictionary())
    pkt[Attr.ACCT_STATUS_TYPE] = int(status)
    pkt[Attr.ACCT_SESSION_ID] = acct_session_id
    _add_nas(pkt, nas)
    if terminate_cause is not None:
        pkt[Attr.ACCT_TERMINATE_CAUSE] = terminate_cause
    pkt[Attr.EVENT_TIMESTAMP] = int(event_time)
    pkt[Attr.ACCT_DELAY_TIME] = max(0, int(delay))
    return pkt


# ------------------------------------------------------------------- replies

def _ipv4(value) -> ipaddress.IPv4Address | None:
    if value in (None, FRAMED_IP_USER_CHOOSES, FRAMED_IP_NAS_CHOOSES):
        return None
    return ipaddress.IPv4Address(value)


def _ipv6_net(value) -> ipaddress.IPv6Network | None:
    return None if value is None else ipaddress.IPv6Network(value, strict=False)


def _text(value) -> str:
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    return str(value)


def _tags(pkt: rp.Packet, name: str) -> list[int]:
    """Tags present on a tagged integer attribute (RFC 2868 3: the tag is
    the first octet of the value)."""
    raw = pkt.get(pkt.dict.attributes[name].code) or []
    return sorted({v[0] for v in raw if len(v) == 4 and v[0] <= _MAX_TAG})


def parse_tunnels(pkt: rp.Packet) -> list[TunnelSpec]:
    """Group the Tunnel-* attributes by tag (RFC 2868) into TunnelSpecs,
    most preferred first. Only L2TP over IPv4 tunnels are something the
    LAC can build; other tunnel types are skipped and logged."""
    tunnels: list[tuple[int, int, TunnelSpec]] = []
    for tag in _tags(pkt, Attr.TUNNEL_TYPE):
        def get(name: str, tag: int = tag):
            return first(pkt, f"{name}:{tag}")

        ttype = int_value(pkt, f"{Attr.TUNNEL_TYPE}:{tag}")
        medium = int_value(pkt, f"{Attr.TUNNEL_MEDIUM_TYPE}:{tag}")
        endpoint = get(Attr.TUNNEL_SERVER_ENDPOINT)
        if ttype != TunnelType.L2TP or medium != TunnelMediumType.IPV4 or not endpoint:
            log.warning("RADIUS tunnel tag %d skipped: type %s medium %s endpoint %r",
                        tag, ttype, medium, endpoint)
            continue
        password = get(Attr.TUNNEL_PASSWORD)
        if isinstance(password, str):
            password = password.encode("utf-8")
        preference = int_value(pkt, f"{Attr.TUNNEL_PREFERENCE}:{tag}", 0)
        spec = TunnelSpec(server_endpoint=_text(endpoint),
                          password=password or b"",
                          client_auth_id=_text(get(Attr.TUNNEL_CLIENT_AUTH_ID) or ""),
                          server_auth_id=_text(get(Attr.TUNNEL_SERVER_AUTH_ID) or ""),
                          preference=preference or 0,
                          assignment_id=_text(get(Attr.TUNNEL_ASSIGNMENT_ID) or ""),
                          medium="IPv4")
        tunnels.append((spec.preference, tag, spec))
    tunnels.sort(key=lambda t: (t[0], t[1]))
    return [t[2] for t in tunnels]


def _safe(what: str, fn, default=None):
    """Evaluate one attribute's decoding; a malformed attribute from a
    server is logged and skipped instead of failing the whole session."""
    try:
        return fn()
    except (ValueError, TypeError, KeyError, rp.PacketError) as e:
        log.warning("RADIUS attribute %s ignored: %s", what, e)
        return default


def parse_authorization(pkt: rp.Packet, result: AuthResult, strict: bool = False) -> AuthResult:
    """The authorization attributes that an Access-Accept and a CoA-Request
    share: rates (Filter-Id), timeouts and the interim interval. A
    malformed one is logged and skipped, or with `strict` raises ValueError
    (a CoA must be applied whole or refused: RFC 5176 3.5, Error-Cause
    407)."""
    def decode(what: str, fn):
        if not strict:
            return _safe(what, fn)
        try:
            return fn()
        except (ValueError, TypeError, KeyError, rp.PacketError) as e:
            raise ValueError(f"{what}: {e}") from e

    rates = decode(Attr.FILTER_ID, lambda: rates_from_filter_ids(pkt.get(Attr.FILTER_ID) or []))
    if rates is not None:
        result.rate_down_kbps, result.rate_up_kbps = rates
    result.session_timeout = decode(Attr.SESSION_TIMEOUT, lambda: int_value(pkt, Attr.SESSION_TIMEOUT))
    result.idle_timeout = decode(Attr.IDLE_TIMEOUT, lambda: int_value(pkt, Attr.IDLE_TIMEOUT))
    result.interim_interval = decode(Attr.ACCT_INTERIM_INTERVAL,
                                     lambda: int_value(pkt, Attr.ACCT_INTERIM_INTERVAL))
    return result


def parse_access_reply(reply: rp.Packet, request_authenticator: bytes) -> AuthResult:
    """An Access-Accept/Reject/Challenge as the session layer sees it.

    `request_authenticator` decrypts the salt-encrypted attributes
    (Tunnel-Password, MS-MPPE keys). A Challenge is a reject: PPP has no
    way to carry a RADIUS challenge to the peer."""
    reply.request_authenticator = request_authenticator
    result = AuthResult(accepted=reply.code == rp.AccessAccept)
    result.reply_message = "".join(_text(v) for v in reply.get(Attr.REPLY_MESSAGE) or [])
    if not result.accepted:
        return result
    service = _safe(Attr.SERVICE_TYPE, lambda: int_value(reply, Attr.SERVICE_TYPE), -1)
    if service is not None and service != ServiceType.FRAMED_USER:
        # RFC 2865 5.6: an unknown or unsupported Service-Type is an
        # Access-Reject. A BNG provides framed (PPP) service only.
        log.warning("RADIUS Access-Accept with Service-Type %s taken as a reject: only Framed-User "
                    "(2) is served", service)
        return AuthResult(accepted=False, reply_message=result.reply_message
                          or f"Service-Type {service} not supported")
    result.framed_ip = _safe(Attr.FRAMED_IP_ADDRESS,
                             lambda: _ipv4(first(reply, Attr.FRAMED_IP_ADDRESS)))
    pool = first(reply, Attr.FRAMED_POOL)
    result.framed_pool = _text(pool) if pool is not None else None
    result.dns = [ipaddress.IPv4Address(v) for name in (Attr.MS_PRIMARY_DNS, Attr.MS_SECONDARY_DNS)
                  for v in (_safe(name, lambda n=name: reply.get(n)) or [])[:1]]
    parse_authorization(reply, result)
    result.classes = tuple(bytes(v) for v in reply.get(Attr.CLASS) or [])
    result.framed_ipv6_prefix = _safe(Attr.FRAMED_IPV6_PREFIX,
                                      lambda: _ipv6_net(first(reply, Attr.FRAMED_IPV6_PREFIX)))
    result.delegated_ipv6_prefix = _safe(
        Attr.DELEGATED_IPV6_PREFIX, lambda: _ipv6_net(first(reply, Attr.DELEGATED_IPV6_PREFIX)))
    success = first(reply, Attr.MS_CHAP2_SUCCESS)
    if success:
        # RFC 2548 2.3.3: Ident octet, then "S=<40 hex>"
        result.mschapv2_success = bytes(success[1:])
    send = _safe(Attr.MS_MPPE_SEND_KEY, lambda: first(reply, Attr.MS_MPPE_SEND_KEY))
    recv = _safe(Attr.MS_MPPE_RECV_KEY, lambda: first(reply, Attr.MS_MPPE_RECV_KEY))
    if send and recv:
        result.mppe_keys = (bytes(send), bytes(recv))
    result.tunnels = _safe("Tunnel-*", lambda: parse_tunnels(reply), []) or []
    return result
