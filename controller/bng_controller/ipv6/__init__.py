"""IPv6 for subscribers: router advertisements and DHCPv6 prefix delegation.

  codec          IPv6, ICMPv6, ND messages and options, UDP (bytes, strict)
  dhcpv6_codec   DHCPv6 messages and options (bytes, strict)
  icmp6          the BNG's ICMPv6 answers on a session: RA, NA, echo, Time Exceeded
  dhcpv6_server  the per-session DHCPv6-PD server (stateless: the prefix is the session's)
  nd             Neighbor Discovery on core ports: NS answers, gateway resolution
  ra_schedule    when each session's next unsolicited RA is due (one heap)
  responder      Ipv6Responder: packet-ins, sessions, counters; what the controller calls
"""
