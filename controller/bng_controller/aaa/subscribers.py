"""The subscriber file of the local AAA backend: parsing and lookup.

The product's embedded default is a YAML file an operator writes by hand,
so it is forgiving in shape (any key may be left out) and strict in
content (a misspelt key or a bad address is an error naming where it is,
not a silently ignored line). Format::

    defaults:                       # every user and pattern starts from these
      pool: residential             # Framed-Pool: the address pool to use
      dns: [192.0.2.53, 192.0.2.54]
      rate_down_kbps: 100000        # network -> subscriber policer
      rate_up_kbps: 20000           # subscriber -> network policer
      session_timeout: 86400        # seconds; absent = none
      idle_timeout: 1800
      interim_interval: 300         # Acct-Interim-Interval, seconds

    users:                          # by exact user name
      alice@isp.test:
        password: alice-secret      # required (PAP, CHAP and MS-CHAPv2 need it)
        ipv4: 100.64.0.10           # static address instead of the pool
        ipv6_prefix: 2001:db8:0:1::/64        # Framed-IPv6-Prefix (the WAN /64)
        delegated_prefix: 2001:db8:100::/56   # DHCPv6-PD
      bob@isp.test:
        password: bob-secret
        disabled: true              # rejected, kept for the record

    patterns:                       # tried in order when no user matches
      - match: 'user(\\d+)@lab\\.test'   # regular expression, whole name
        password: 'pass{1}'         # {0} is the name, {1}.. the groups, {name} named groups
        pool: lab

    realms:                         # LAC: users of a realm go to an LNS
      wholesale.test:
        authenticate: false         # default: the LNS authenticates, we accept anyone
        tunnels:                    # lower preference first (RFC 2868 3.8)
          - server: 192.0.2.10
            password: l2tp-secret
            client_auth_id: bng1    # our host name toward the LNS
            server_auth_id: lns1
            preference: 1
            assignment_id: lns1-a   # tunnels with the same id are shared

A user name's realm is what follows its last "@", matched without regard
to case. With `authenticate: true` a realm's users must also be found in
`users` or `patterns` and pass the password check.
"""
from __future__ import annotations

import dataclasses
import ipaddress
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from .base import TunnelSpec

_PROFILE_KEYS = {"password", "ipv4", "pool", "dns", "rate_up_kbps", "rate_down_kbps",
                 "session_timeout", "idle_timeout", "interim_interval", "ipv6_prefix",
                 "delegated_prefix", "disabled"}
_PATTERN_KEYS = (_PROFILE_KEYS - {"ipv4", "ipv6_prefix", "delegated_prefix"}) | {"match"}
_TUNNEL_KEYS = {"server", "password", "client_auth_id", "server_auth_id", "preference",
                "assignment_id"}
_REALM_KEYS = {"authenticate", "tunnels"}
_TOP_KEYS = {"defaults", "users", "patterns", "realms"}
_INT_KEYS = ("rate_up_kbps", "rate_down_kbps", "session_timeout", "idle_timeout",
             "interim_interval")


class SubscriberFileError(ValueError):
    """The subscriber file is wrong; the message says where."""


@dataclass(frozen=True)
class Profile:
    """What a user gets once authenticated (defaults already applied)."""
    password: str | None = None
    ipv4: ipaddress.IPv4Address | None = None
    pool: str | None = None
    dns: tuple[ipaddress.IPv4Address, ...] = ()
    rate_up_kbps: int | None = None
    rate_down_kbps: int | None = None
    session_timeout: int | None = None
    idle_timeout: int | None = None
    interim_interval: int | None = None
    ipv6_prefix: ipaddress.IPv6Network | None = None
    delegated_prefix: ipaddress.IPv6Network | None = None
    disabled: bool = False

    def with_password(self, password: str) -> Profile:
        """This profile with another password: what a pattern gives each
        user it matches. A copy of the fields, not dataclasses.replace(),
        whose field-by-field re-initialisation was 2% of the controller's
        CPU in a setup storm of pattern users (nothing needs validating
        again: only the password differs)."""
        p = object.__new__(Profile)
        p.__dict__.update(self.__dict__)
        p.__dict__["password"] = password
        return p


@dataclass(frozen=True)
class Pattern:
    regex: re.Pattern
    password_template: str
    profile: Profile

    def resolve(self, username: str) -> Profile | None:
        m = self.regex.fullmatch(username)
        if m is None:
            return None
        password = self.password_template.format(m.group(0), *m.groups(), **m.groupdict())
        return self.profile.with_password(password)


@dataclass(frozen=True)
class Realm:
    tunnels: tuple[TunnelSpec, ...]
    authenticate: bool = False


@dataclass
class SubscriberDB:
    users: dict[str, Profile] = field(default_factory=dict)
    patterns: list[Pattern] = field(default_factory=list)
    realms: dict[str, Realm] = field(default_factory=dict)

    def lookup(self, username: str) -> Profile | None:
        """The user's profile: exact entry first, then the first pattern."""
        profile = self.users.get(username)
        if profile is not None:
            return profile
        for pattern in self.patterns:
            profile = pattern.resolve(username)
            if profile is not None:
                return profile
        return None

    def realm_for(self, username: str) -> Realm | None:
        if "@" not in username:
            return None
        return self.realms.get(username.rsplit("@", 1)[1].lower())


# ------------------------------------------------------------------ parsing

def _mapping(value: Any, where: str) -> dict:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise SubscriberFileError(f"{where}: expected a mapping, got {type(value).__name__}")
    return value


def _check_keys(d: dict, allowed: set[str], where: str) -> None:
    unknown = set(d) - allowed
    if unknown:
        raise SubscriberFileError(f"{where}: unknown key(s) {sorted(map(str, unknown))}; "
                                  f"allowed: {sorted(allowed)}")


def _profile(d: dict, base: Profile, where: str) -> Profile:
    """Apply the keys of `d` over `base`, converting and validating."""
    kw: dict[str, Any] = {}
    try:
        if "password" in d:
            kw["password"] = None if d["password"] is None else str(d["password"])
        if "ipv4" in d:
            kw["ipv4"] = ipaddress.IPv4Address(str(d["ipv4"])) if d["ipv4"] else None
        if "pool" in d:
            kw["pool"] = str(d["pool"]) if d["pool"] else None
        if "dns" in d:
            dns = d["dns"] or []
            dns = [dns] if isinstance(dns, str) else dns
            kw["dns"] = tuple(ipaddress.IPv4Address(str(a)) for a in dns)
        for key in _INT_KEYS:
            if key in d:
                value = d[key]
                if value is not None and (isinstance(value, bool) or int(value) < 0):
                    raise ValueError(f"{key} must be a non-negative number")
                kw[key] = None if value is None else int(value)
        for key in ("ipv6_prefix", "delegated_prefix"):
            if key in d:
                kw[key] = ipaddress.IPv6Network(str(d[key])) if d[key] else None
        if "disabled" in d:
            kw["disabled"] = bool(d["disabled"])
    except ValueError as e:
        raise SubscriberFileError(f"{where}: {e}") from e
    return dataclasses.replace(base, **kw)


def _tunnel(d: Any, where: str) -> TunnelSpec:
    d = _mapping(d, where)
    _check_keys(d, _TUNNEL_KEYS, where)
    if not d.get("server"):
        raise SubscriberFileError(f"{where}: 'server' (the LNS address) is required")
    try:
        server = str(ipaddress.IPv4Address(str(d["server"])))
        preference = int(d.get("preference", 0))
    except ValueError as e:
        raise SubscriberFileError(f"{where}: {e}") from e
    password = d.get("password") or ""
    return TunnelSpec(server_endpoint=server,
                      password=password if isinstance(password, bytes) else str(password).encode(),
                      client_auth_id=str(d.get("client_auth_id") or ""),
                      server_auth_id=str(d.get("server_auth_id") or ""),
                      preference=preference,
                      assignment_id=str(d.get("assignment_id") or ""))


def _pattern(d: Any, base: Profile, where: str) -> Pattern:
    d = _mapping(d, where)
    _check_keys(d, _PATTERN_KEYS, where)
    if "match" not in d or "password" not in d:
        raise SubscriberFileError(f"{where}: 'match' and 'password' are required")
    try:
        regex = re.compile(str(d["match"]))
    except re.error as e:
        raise SubscriberFileError(f"{where}: bad regular expression: {e}") from e
    template = str(d["password"])
    try:   # fail at load time, not at the first subscriber
        template.format(*["x"] * (regex.groups + 1), **{k: "x" for k in regex.groupindex})
    except (IndexError, KeyError, ValueError) as e:
        raise SubscriberFileError(f"{where}: password template {template!r} does not fit "
                                  f"the expression's groups: {e!r}") from e
    profile = _profile({k: v for k, v in d.items() if k not in ("match", "password")}, base, where)
    return Pattern(regex=regex, password_template=template, profile=profile)


def parse_subscribers(data: Any, source: str = "subscribers") -> SubscriberDB:
    """Build the lookup tables from the parsed YAML document."""
    top = _mapping(data, source)
    _check_keys(top, _TOP_KEYS, source)
    defaults = _mapping(top.get("defaults"), f"{source}: defaults")
    _check_keys(defaults, _PROFILE_KEYS - {"password", "ipv4", "ipv6_prefix", "delegated_prefix"},
                f"{source}: defaults")
    base = _profile(defaults, Profile(), f"{source}: defaults")

    db = SubscriberDB()
    for name, entry in _mapping(top.get("users"), f"{source}: users").items():
        where = f"{source}: users.{name}"
        entry = _mapping(entry, where)
        _check_keys(entry, _PROFILE_KEYS, where)
        profile = _profile(entry, base, where)
        if profile.password is None:
            raise SubscriberFileError(f"{where}: 'password' is required")
        db.users[str(name)] = profile
    patterns = top.get("patterns") or []
    if not isinstance(patterns, list):
        raise SubscriberFileError(f"{source}: patterns: expected a list")
    db.patterns = [_pattern(p, base, f"{source}: patterns[{i}]") for i, p in enumerate(patterns)]
    for name, entry in _mapping(top.get("realms"), f"{source}: realms").items():
        where = f"{source}: realms.{name}"
        entry = _mapping(entry, where)
        _check_keys(entry, _REALM_KEYS, where)
        tunnels = entry.get("tunnels") or []
        if not isinstance(tunnels, list) or not tunnels:
            raise SubscriberFileError(f"{where}: 'tunnels' must be a non-empty list")
        specs = sorted((_tunnel(t, f"{where}.tunnels[{i}]") for i, t in enumerate(tunnels)),
                       key=lambda t: t.preference)
        db.realms[str(name).lower()] = Realm(tunnels=tuple(specs),
                                             authenticate=bool(entry.get("authenticate", False)))
    return db


def load_subscribers(path: str | Path) -> SubscriberDB:
    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as e:
        raise SubscriberFileError(f"{path}: {e.strerror}") from e
    except yaml.YAMLError as e:
        raise SubscriberFileError(f"{path}: {e}") from e
    return parse_subscribers(data, str(path))
