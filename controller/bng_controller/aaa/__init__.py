"""AAA: the local subscriber file and RADIUS behind one interface (base.py).

`make_backend(cfg)` picks one from the config; `DynAuthServer` serves
RFC 5176 Disconnect/CoA requests toward the session layer's handler.
"""
from .factory import make_backend

__all__ = ["make_backend"]
