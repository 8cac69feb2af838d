"""P4Runtime client arbitration (spec section 5): primary and backup clients.

Per role, a client becomes primary when its election id is at least the
highest the server has seen for the role (election_id_past); any other
client is a backup. When the primary's stream breaks or it downgrades
itself, the role has no primary until some client sends an arbitration
update with an id at least that high (spec 5, "the P4Runtime server will be
without a primary controller, until a client sends a successful
MasterArbitrationUpdate"): a backup that was connected all along does not
take over by itself, which is what keeps two controllers that each think
they lead from both writing. Only the primary may write, set the pipeline
or send packets; every client of the role hears when the primary changes.
Pure bookkeeping, no I/O: the service gives it events and sends what it
returns.
"""
from __future__ import annotations

import itertools
import queue
import threading
from dataclasses import dataclass, field

import grpc

_ids = itertools.count(1)
# The election id of a client that sent none (spec, Unset Election ID):
# lower than any, so it is a backup that never becomes primary, and it
# clashes with no other client's.
UNSET = (-1, -1)


@dataclass(eq=False)
class Client:
    """One open StreamChannel."""
    queue: "queue.Queue"
    id: int = field(default_factory=lambda: next(_ids))
    role: str = ""
    election_id: tuple[int, int] | None = None  # (high, low)


class ArbitrationError(Exception):
    def __init__(self, code: grpc.StatusCode, message: str):
        super().__init__(message)
        self.code = code
        self.message = message


class Arbitration:
    def __init__(self, device_id: int):
        self.device_id = device_id
        self._lock = threading.Lock()
        self._clients: set[Client] = set()
        self._primaries: dict[str, Client] = {}
        self._past: dict[str, tuple[int, int]] = {}     # role -> election_id_past

    def _role_clients(self, role: str) -> list[Client]:
        return [c for c in self._clients if c.role == role and c.election_id is not None]

    def primary(self, role: str = "") -> Client | None:
        with self._lock:
            return self._primaries.get(role)

    def update(self, client: Client, device_id: int, role: str, election_id: tuple[int, int]) -> list[Client]:
        """A MasterArbitrationUpdate from client (election_id UNSET when it
        carried none); returns the clients to notify."""
        live = client.election_id is not None
        if device_id != self.device_id:
            # spec 5.3: a live stream naming another device is a precondition
            # failure; a first update naming an unknown one is NOT_FOUND
            raise ArbitrationError(grpc.StatusCode.FAILED_PRECONDITION if live else grpc.StatusCode.NOT_FOUND,
                                   f"unknown device id {device_id}")
        with self._lock:
            if live and client.role != role:
                raise ArbitrationError(grpc.StatusCode.FAILED_PRECONDITION,
                                       "a stream cannot change its role: open a new stream for the other role")
            for other in self._role_clients(role):
                if other is not client and other.election_id == election_id != UNSET:
                    raise ArbitrationError(grpc.StatusCode.INVALID_ARGUMENT,
                                           f"election id {election_id} is used by another client of this role")
            before = self._primaries.get(role)
            client.role, client.election_id = role, election_id
            self._clients.add(client)
            past = self._past.get(role)
            if election_id != UNSET and (past is None or election_id >= past):
                self._primaries[role] = client
                self._past[role] = election_id
            elif before is client:
                del self._primaries[role]          # the primary downgraded itself
            # The sender always gets an answer; everyone else only when the
            # primary changed.
            if self._primaries.get(role) is not before:
                return self._role_clients(role)
            return [client]

    def remove(self, client: Client) -> list[Client]:
        """The client's stream closed; returns the clients to notify (all of
        its role's when it was their primary: the role now has none)."""
        with self._lock:
            if client not in self._clients:
                return []
            self._clients.discard(client)
            if self._primaries.get(client.role) is client:
                del self._primaries[client.role]
                return self._role_clients(client.role)
            return []

    def status_for(self, client: Client) -> tuple[grpc.StatusCode, str]:
        with self._lock:
            p = self._primaries.get(client.role)
        if p is client:
            return grpc.StatusCode.OK, "primary"
        if p is None:
            return grpc.StatusCode.NOT_FOUND, "no primary"
        return grpc.StatusCode.ALREADY_EXISTS, "backup: a client with a higher election id is primary"

    def highest_election_id(self, role: str) -> tuple[int, int] | None:
        """election_id_past: the highest election id any primary of the role
        has had (what notifications carry); None before the first."""
        with self._lock:
            return self._past.get(role)

    def primary_election_id(self, role: str) -> tuple[int, int] | None:
        with self._lock:
            p = self._primaries.get(role)
            return p.election_id if p else None

    def check_primary(self, device_id: int, role: str, election_id: tuple[int, int]) -> None:
        """Raise unless this election id is the role's primary (Write,
        SetPipeline); UNSET never is."""
        if device_id != self.device_id:
            raise ArbitrationError(grpc.StatusCode.NOT_FOUND, f"unknown device id {device_id}")
        with self._lock:
            p = self._primaries.get(role)
            if p is None or p.election_id != election_id:
                raise ArbitrationError(grpc.StatusCode.PERMISSION_DENIED,
                                       f"election id {election_id} is not the primary of role '{role}'")
