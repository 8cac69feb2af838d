"""IPv6 for subscribers: router advertisements and DHCPv6 prefix delegation."""
