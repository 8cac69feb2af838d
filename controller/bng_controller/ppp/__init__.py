"""PPP (RFC 1661 and friends): codecs, the option-negotiation automaton, LCP, authentication, NCPs."""
