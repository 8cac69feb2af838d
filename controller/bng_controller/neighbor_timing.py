"""When a next-hop resolver (ARP for IPv4, ND for IPv6) asks for a
neighbor again; one rule for both, so that the two address families age
their gateways alike."""
from __future__ import annotations


def request_interval(resolved: bool, unanswered: int, refresh: float, retry: float, retry_cap: float) -> float:
    """Time from one request for a neighbor to the next. Resolved: `refresh`,
    and `retry` once one went unanswered, so a dead neighbor is forgotten a
    few retries after a refresh, not after as many refreshes. Unresolved:
    `retry` doubling to `retry_cap` while it stays silent, so a neighbor
    that never answers (a dead gateway, an address an outsider made us look
    up) costs one request every few seconds, not one a second for ever."""
    if resolved:
        return retry if unanswered else refresh
    return min(retry * 2 ** min(unanswered, 16), retry_cap)
