"""Local AAA backend: subscribers from a YAML file, checked by the BNG
itself. It is the embedded default, so a lab (or a small operator) runs
without any RADIUS server; the file format is documented in
subscribers.py and shown in configs/subscribers.example.yaml.

PAP, CHAP-MD5 and MS-CHAPv2 are verified here (chap_verify.py); an
MS-CHAPv2 success carries the authenticator response ("S=...") for the
peer and the MPPE keys RADIUS would have sent. Users of a realm with
tunnels are handed to an LNS (LAC), by default without a password check
here: the LNS authenticates them.

Accounting goes to a JSON-lines file when one is configured (one record
per line, flushed per record, so `tail -f` and a crash both see whole
lines), otherwise to the log.

Config (`LocalAaa.from_dict`)::

    subscribers: /etc/bng/subscribers.yaml
    accounting_file: /var/log/bng/accounting.jsonl    # optional
"""
from __future__ import annotations

import dataclasses
import datetime
import hmac
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import orjson

from . import chap_verify
from .base import AcctRecord, AuthMethod, AuthRequest, AuthResult
from .subscribers import Profile, SubscriberDB, load_subscribers, parse_subscribers

log = logging.getLogger(__name__)

__all__ = ["LocalAaa", "LocalCounters"]

_CONFIG_KEYS = {"subscribers", "accounting_file"}
REJECT_UNKNOWN = "unknown user"
REJECT_DISABLED = "account disabled"
REJECT_CREDENTIALS = "authentication failed"


@dataclass
class LocalCounters:
    accepts: int = 0
    rejects: int = 0
    acct_records: int = 0
    reloads: int = 0

    def as_dict(self) -> dict[str, int]:
        return dataclasses.asdict(self)


class LocalAaa:
    """`AaaBackend` over the subscriber file. Give `subscribers` (a path)
    or `data` (the parsed document, for tests and embedded configs)."""

    def __init__(self, subscribers: str | Path | None = None, *, data: Any = None,
                 accounting_file: str | Path | None = None) -> None:
        if (subscribers is None) == (data is None):
            raise ValueError("LocalAaa needs exactly one of a subscriber file or inline data")
        self._path = Path(subscribers) if subscribers is not None else None
        self._data = data
        self.counters = LocalCounters()
        self._db: SubscriberDB = self._load()
        self._acct_path = Path(accounting_file) if accounting_file else None
        self._acct_file: IO[str] | None = None

    @classmethod
    def from_dict(cls, d: dict) -> "LocalAaa":
        unknown = set(d) - _CONFIG_KEYS
        if unknown:
            raise ValueError(f"local: unknown keys {sorted(unknown)}")
        if not d.get("subscribers"):
            raise ValueError("local: 'subscribers' (the subscriber file) is required")
        return cls(d["subscribers"], accounting_file=d.get("accounting_file"))

    def _load(self) -> SubscriberDB:
        if self._path is not None:
            return load_subscribers(self._path)
        return parse_subscribers(self._data, "inline subscribers")

    def reload(self) -> None:
        """Re-read the subscriber file (SIGHUP). On an error the previous
        contents stay in force and SubscriberFileError says what is wrong."""
        self._db = self._load()
        self.counters.reloads += 1
        log.info("subscribers reloaded: %d users, %d patterns, %d realms",
                 len(self._db.users), len(self._db.patterns), len(self._db.realms))

    # ------------------------------------------------------ authentication

    def _reject(self, req: AuthRequest, why: str) -> AuthResult:
        self.counters.rejects += 1
        log.info("local AAA: reject %r (%s, %s)", req.username, req.method.value, why)
        return AuthResult(accepted=False, reply_message=why)

    async def authenticate(self, req: AuthRequest) -> AuthResult:
        realm = self._db.realm_for(req.username)
        profile = self._db.lookup(req.username)
        if realm is not None and not realm.authenticate:
            # LAC: the LNS authenticates; we only pick the tunnels.
            self.counters.accepts += 1
            return AuthResult(accepted=True, tunnels=list(realm.tunnels))
        if profile is None:
            return self._reject(req, REJECT_UNKNOWN)
        if profile.disabled:
            return self._reject(req, REJECT_DISABLED)
        result = self._verify(req, profile.password or "")
        if result is None:
            return self._reject(req, REJECT_CREDENTIALS)
        _authorize(result, profile)
        if realm is not None:
            result.tunnels = list(realm.tunnels)
        self.counters.accepts += 1
        return result

    @staticmethod
    def _verify(req: AuthRequest, password: str) -> AuthResult | None:
        """The credential check per method; an accepted result or None."""
        if req.method is AuthMethod.PAP:
            if hmac.compare_digest(req.password, password.encode("utf-8")):
                return AuthResult(accepted=True)
            return None
        if req.method is AuthMethod.CHAP_MD5:
            if chap_verify.verify_chap_md5(req.chap_id, password, req.challenge, req.response):
                return AuthResult(accepted=True)
            return None
        if req.method is AuthMethod.MSCHAPV2:
            success = chap_verify.verify_mschapv2(req.username, password, req.challenge,
                                                  req.response)
            if success is None:
                return None
            _peer, nt_response, _flags = chap_verify.split_mschapv2_response(req.response)
            return AuthResult(accepted=True, mschapv2_success=success,
                              mppe_keys=chap_verify.mppe_server_keys(password, nt_response))
        return None  # pragma: no cover - enum is closed

    # ---------------------------------------------------------- accounting

    async def account(self, rec: AcctRecord) -> None:
        self.counters.acct_records += 1
        line = orjson.dumps(acct_record_json(rec)).decode()
        if self._acct_path is None:
            log.info("accounting: %s", line)
            return
        if self._acct_file is None:
            self._acct_path.parent.mkdir(parents=True, exist_ok=True)
            self._acct_file = self._acct_path.open("a", encoding="utf-8")
        self._acct_file.write(line + "\n")
        self._acct_file.flush()

    async def close(self) -> None:
        if self._acct_file is not None:
            self._acct_file.close()
            self._acct_file = None


def _authorize(result: AuthResult, profile: Profile) -> None:
    result.framed_ip = profile.ipv4
    result.framed_pool = profile.pool
    result.dns = list(profile.dns)
    result.rate_up_kbps = profile.rate_up_kbps
    result.rate_down_kbps = profile.rate_down_kbps
    result.session_timeout = profile.session_timeout
    result.idle_timeout = profile.idle_timeout
    result.interim_interval = profile.interim_interval
    result.framed_ipv6_prefix = profile.ipv6_prefix
    result.delegated_ipv6_prefix = profile.delegated_prefix


def acct_record_json(rec: AcctRecord) -> dict:
    """One accounting record as a flat JSON object (stable key names, so
    scripts can rely on them)."""
    event = rec.event_time or datetime.datetime.now(datetime.timezone.utc).timestamp()
    c = rec.counters
    return {
        "time": datetime.datetime.fromtimestamp(event, datetime.timezone.utc).isoformat(),
        "status": rec.status.name.lower(),
        "acct_session_id": rec.acct_session_id,
        "username": rec.username,
        "client_mac": rec.client_mac,
        "nas_port_id": rec.line.nas_port_id,
        "line_id": rec.line.line_id,
        "pppoe_session_id": rec.session_id,
        "framed_ip": str(rec.framed_ip) if rec.framed_ip else None,
        "framed_ipv6_prefix": str(rec.framed_ipv6_prefix) if rec.framed_ipv6_prefix else None,
        "delegated_ipv6_prefix": (str(rec.delegated_ipv6_prefix)
                                  if rec.delegated_ipv6_prefix else None),
        "session_time": rec.session_time,
        "octets_in": c.octets_in,
        "octets_out": c.octets_out,
        "packets_in": c.packets_in,
        "packets_out": c.packets_out,
        "terminate_cause": rec.terminate_cause.name.lower() if rec.terminate_cause else None,
        "class": [c.hex() for c in rec.classes] or None,
    }
