"""PPPoE (RFC 2516): packet codec and the discovery stage."""
