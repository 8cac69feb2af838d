"""L2TPv2 (RFC 2661): control connection, tunnels and sessions, LAC and LNS."""
