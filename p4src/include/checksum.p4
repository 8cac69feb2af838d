/*
 * Internet checksum arithmetic (RFC 1071, RFC 1624) in plain P4 so that the
 * core needs no architecture's checksum extern.
 */
#ifndef BNG_CHECKSUM_P4
#define BNG_CHECKSUM_P4

#include "headers.p4"

/* One's complement sum of an option-less IPv4 header's ten words, folded to
 * 16 bits: 0xffff for a header whose checksum is right. */
bit<16> ipv4_header_sum(in ipv4_h h) {
    bit<32> s = ((bit<32>) h.version_ihl << 8) + (bit<32>) h.dscp_ecn
              + (bit<32>) h.total_len + (bit<32>) h.identification
              + (bit<32>) h.flags_frag + ((bit<32>) h.ttl << 8) + (bit<32>) h.protocol
              + (bit<32>) h.checksum
              + (h.src_addr >> 16) + (h.src_addr & 0xffff)
              + (h.dst_addr >> 16) + (h.dst_addr & 0xffff);
    s = (s & 0xffff) + (s >> 16);
    s = (s & 0xffff) + (s >> 16);
    return (bit<16>) s;
}

/* RFC 1624 eqn. 3: the checksum after one 16-bit word changed from m to m1. */
bit<16> checksum_update(in bit<16> hc, in bit<16> m, in bit<16> m1) {
    bit<32> s = (bit<32>) (~hc) + (bit<32>) (~m) + (bit<32>) m1;
    s = (s & 0xffff) + (s >> 16);
    s = (s & 0xffff) + (s >> 16);
    return ~((bit<16>) s);
}

#endif
