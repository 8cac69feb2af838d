"""Subscriber address pools.

A pool hands out host addresses of its prefixes, skipping the network,
broadcast and gateway addresses and anything reserved. Released addresses
go to the back of the free list, so an address is not handed to the next
subscriber the moment its last owner left (stale sessions, ARP caches and
logs stay unambiguous for as long as possible). Static addresses (RADIUS
Framed-IP-Address, the local file) are taken out of their pool when they
fall inside one, so the pool never hands them out twice.
"""
from __future__ import annotations

import collections
import ipaddress
from dataclasses import dataclass, field

IPv4 = ipaddress.IPv4Address


class PoolExhausted(Exception):
    pass


@dataclass
class PoolConfig:
    name: str
    prefixes: list[ipaddress.IPv4Network]
    gateway: IPv4                          # the BNG's address toward these subscribers
    dns: list[IPv4] = field(default_factory=list)
    exclude: list[IPv4] = field(default_factory=list)

    @classmethod
    def from_dict(cls, name: str, d: dict) -> "PoolConfig":
        prefixes = d["prefixes"] if "prefixes" in d else [d["prefix"]]
        return cls(name=name, prefixes=[ipaddress.IPv4Network(p) for p in prefixes],
                   gateway=IPv4(d["gateway"]), dns=[IPv4(x) for x in d.get("dns", [])],
                   exclude=[IPv4(x) for x in d.get("exclude", [])])


class Ipv4Pool:
    def __init__(self, cfg: PoolConfig):
        self.cfg = cfg
        skip = {cfg.gateway, *cfg.exclude}
        self._free: collections.deque[IPv4] = collections.deque()
        self._members: set[IPv4] = set()
        for net in cfg.prefixes:
            for a in net.hosts():
                self._members.add(a)
                if a not in skip:
                    self._free.append(a)
        self._free_set = set(self._free)
        self.size = len(self._free)
        self.used: set[IPv4] = set()

    def __contains__(self, addr: IPv4) -> bool:
        return addr in self._members

    def allocate(self) -> IPv4:
        while self._free:
            a = self._free.popleft()
            if a not in self._free_set:
                continue             # taken by take() since it was queued
            self._free_set.discard(a)
            self.used.add(a)
            return a
        raise PoolExhausted(f"pool {self.cfg.name} has no free address ({self.size} in all)")

    def take(self, addr: IPv4) -> bool:
        """Mark a specific address used (static assignment or a session
        restored after a restart). False if it is already in use."""
        if addr in self.used:
            return False
        self._free_set.discard(addr)     # its queue slot is skipped lazily
        self.used.add(addr)
        return True

    def release(self, addr: IPv4) -> None:
        if addr in self.used:
            self.used.discard(addr)
            if addr in self._members and addr != self.cfg.gateway and addr not in self.cfg.exclude:
                self._free.append(addr)
                self._free_set.add(addr)

    @property
    def free(self) -> int:
        return len(self._free_set)


class PoolSet:
    """The named pools of a BNG; `default` serves subscribers whose AAA
    answer names none."""

    def __init__(self, configs: list[PoolConfig], default: str | None = None):
        if not configs:
            raise ValueError("at least one IPv4 pool is needed")
        self.pools = {c.name: Ipv4Pool(c) for c in configs}
        self.default = default or configs[0].name
        if self.default not in self.pools:
            raise ValueError(f"default pool {self.default!r} is not defined")

    def pool(self, name: str | None) -> Ipv4Pool:
        p = self.pools.get(name or self.default)
        if p is None:
            raise PoolExhausted(f"no pool named {name!r}")
        return p

    def owner(self, addr: IPv4) -> Ipv4Pool | None:
        for p in self.pools.values():
            if addr in p:
                return p
        return None

    def allocate(self, name: str | None) -> tuple[IPv4, Ipv4Pool]:
        p = self.pool(name)
        return p.allocate(), p

    def take_static(self, addr: IPv4) -> bool:
        p = self.owner(addr)
        return p.take(addr) if p is not None else True

    def release(self, addr: IPv4) -> None:
        p = self.owner(addr)
        if p is not None:
            p.release(addr)


class Ipv6PrefixPool:
    """Prefixes of one length carved from a larger one (the WAN /64 of
    each session, or delegated prefixes), handed out in order, reused
    last-released-last."""

    def __init__(self, net: ipaddress.IPv6Network, length: int):
        if length < net.prefixlen or length > 64:
            raise ValueError(f"cannot carve /{length} prefixes from {net}")
        self.net = net
        self.length = length
        self.size = 1 << (length - net.prefixlen)
        self._next = 0
        self._released: collections.deque[int] = collections.deque()
        self._used: set[int] = set()

    def _prefix(self, i: int) -> ipaddress.IPv6Network:
        base = int(self.net.network_address) + (i << (128 - self.length))
        return ipaddress.IPv6Network((base, self.length))

    def _index(self, p: ipaddress.IPv6Network) -> int | None:
        if p.prefixlen != self.length or not p.subnet_of(self.net):
            return None
        return (int(p.network_address) - int(self.net.network_address)) >> (128 - self.length)

    def allocate(self) -> ipaddress.IPv6Network:
        while self._released:
            i = self._released.popleft()
            if i not in self._used:
                self._used.add(i)
                return self._prefix(i)
        while self._next < self.size:
            i = self._next
            self._next += 1
            if i not in self._used:
                self._used.add(i)
                return self._prefix(i)
        raise PoolExhausted(f"no free /{self.length} in {self.net}")

    def take(self, p: ipaddress.IPv6Network) -> bool:
        i = self._index(p)
        if i is None:
            return True               # not ours (AAA-assigned): nothing to track
        if i in self._used:
            return False
        self._used.add(i)
        return True

    def release(self, p: ipaddress.IPv6Network) -> None:
        i = self._index(p)
        if i is not None and i in self._used:
            self._used.discard(i)
            self._released.append(i)

    @property
    def in_use(self) -> int:
        return len(self._used)
