"""Choose the AAA backend from the controller config.

    aaa:
      backend: local            # or radius
      local: {subscribers: /etc/bng/subscribers.yaml, accounting_file: ...}
      radius: {servers: [...], nas_identifier: bng1, ...}

Only the chosen backend's section is read, so an operator can keep both
sections and switch with one word.
"""
from __future__ import annotations

from .base import AaaBackend
from .local import LocalAaa
from .radius import RadiusAaa

BACKENDS = {"local": LocalAaa.from_dict, "radius": RadiusAaa.from_dict}
DEFAULT_BACKEND = "local"


def make_backend(cfg: dict) -> AaaBackend:
    """The backend named by `cfg["backend"]`, built from `cfg[<name>]`."""
    name = cfg.get("backend", DEFAULT_BACKEND)
    if name not in BACKENDS:
        raise ValueError(f"aaa: backend must be one of {sorted(BACKENDS)}, not {name!r}")
    section = cfg.get(name)
    if not isinstance(section, dict):
        raise ValueError(f"aaa: backend {name!r} needs a '{name}:' section")
    return BACKENDS[name](section)
