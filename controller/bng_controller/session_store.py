"""Established sessions on disk, so a restarted controller takes them over.

Only sessions that reached the network phase are stored: one that was
still negotiating when the controller died is renegotiated by its CPE
anyway. Each row is the JSON snapshot the session manager makes (PPP
values both ends agreed on, addresses, AAA answer, accounting ids); the
data plane entries are not stored, they are derived again.

Writes are coalesced: `put`/`delete` mark the row, and `flush()` (called
by the manager after each burst of work) commits them in one transaction,
so a setup storm costs one fsync per batch, not per session. Rows are
encoded with orjson: the stdlib encoder was a twentieth of the
controller's CPU during a setup storm.
"""
from __future__ import annotations

import sqlite3
from pathlib import Path

import orjson


# The snapshot format's version, kept in `meta`. A store without one is
# version 1 (written before it was kept). Raise it when a snapshot change
# cannot be read by the code before it; a newer store is refused whole
# rather than read as if it were this version's (and its sessions dropped
# one by one as unreadable).
FORMAT = 1


class StoreTooNew(RuntimeError):
    """The store was written by a later version of the controller."""


class SessionStore:
    def __init__(self, path: Path):
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self.db = sqlite3.connect(str(path), isolation_level=None)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=NORMAL")
        self.db.execute("CREATE TABLE IF NOT EXISTS sessions (sid INTEGER PRIMARY KEY, data TEXT NOT NULL)")
        self.db.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        found = int(self.get_meta("format") or 1)
        if found > FORMAT:
            self.db.close()
            raise StoreTooNew(f"{path}: sessions stored in format {found}, this controller reads up to "
                              f"{FORMAT}; run the newer controller, or move the file away to start afresh")
        self.set_meta("format", str(FORMAT))
        self._dirty: dict[int, dict | None] = {}

    def put(self, sid: int, snapshot: dict) -> None:
        self._dirty[sid] = snapshot

    def delete(self, sid: int) -> None:
        self._dirty[sid] = None

    @property
    def pending(self) -> int:
        return len(self._dirty)

    def flush(self) -> None:
        """Commit the marked rows in one transaction. When the database
        refuses (disk full, locked by another process, an I/O error) the
        transaction is rolled back and the rows stay marked for the next
        flush, a row marked since then winning: one failure loses nothing
        and does not leave a transaction open to fail every later flush.
        The error is raised for the caller to count."""
        if not self._dirty:
            return
        dirty, self._dirty = self._dirty, {}
        cur = self.db.cursor()
        try:
            cur.execute("BEGIN")
            for sid, snap in dirty.items():
                if snap is None:
                    cur.execute("DELETE FROM sessions WHERE sid = ?", (sid,))
                else:
                    cur.execute("INSERT OR REPLACE INTO sessions (sid, data) VALUES (?, ?)",
                                (sid, orjson.dumps(snap).decode()))
            cur.execute("COMMIT")
        except sqlite3.Error:
            if self.db.in_transaction:
                self.db.execute("ROLLBACK")
            for sid, snap in dirty.items():
                self._dirty.setdefault(sid, snap)
            raise

    def load(self) -> list[dict]:
        return [orjson.loads(d) for (d,) in self.db.execute("SELECT data FROM sessions ORDER BY sid")]

    def count(self) -> int:
        """Sessions stored (committed ones: call after flush())."""
        return self.db.execute("SELECT COUNT(*) FROM sessions").fetchone()[0]

    def get_meta(self, key: str) -> str | None:
        row = self.db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None

    def set_meta(self, key: str, value: str) -> None:
        self.db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, value))

    def clear(self) -> None:
        self._dirty.clear()
        self.db.execute("DELETE FROM sessions")

    def close(self) -> None:
        try:
            self.flush()
        finally:
            self.db.close()
