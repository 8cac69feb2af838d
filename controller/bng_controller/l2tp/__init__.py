"""L2TPv2 (RFC 2661): control connection, tunnels and sessions, LAC and LNS.

Sans-I/O layers, each usable alone:

- `codec`: messages (header, AVPs, hiding, data messages), no state;
- `control`: the reliable control channel of one tunnel (RFC 2661 5.8);
- `tunnel`: tunnel and session state machines, events, configuration;
- `endpoint`: `L2tpEndpoint`, what the service drives: it demultiplexes
  received L2TP payloads, runs every tunnel's timers from one heap, and
  hands out datagrams to send and events to act on.
"""
from .codec import CodecError, PppDisconnectCause, Q931Cause, ResultCode
from .control import ChannelConfig
from .endpoint import L2tpEndpoint
from .ids import IdAllocator
from .tunnel import (AccessLine, CallParams, Datagram, IncomingCall, L2tpError, PeerInfo, PppFrame,
                     ProxyAuth, ProxyLcp, Session, SessionDown, SessionState, SessionUp, Tunnel, TunnelConfig,
                     TunnelDown, TunnelFailed, TunnelState, TunnelUp)

__all__ = ["AccessLine", "CallParams", "ChannelConfig", "CodecError", "Datagram", "IdAllocator",
           "IncomingCall", "L2tpEndpoint", "L2tpError", "PeerInfo", "PppDisconnectCause", "PppFrame",
           "ProxyAuth", "ProxyLcp", "Q931Cause", "ResultCode", "Session", "SessionDown", "SessionState",
           "SessionUp", "Tunnel", "TunnelConfig", "TunnelDown", "TunnelFailed",
           "TunnelState", "TunnelUp"]
