/*
 * Headers and metadata of the BNG data plane.
 *
 * Naming: `ipv4`/`ipv6` is IP carried directly in Ethernet (core side,
 * including the outer header of L2TP); `inner_ipv4`/`inner_ipv6` is IP
 * carried in PPP (PPPoE or L2TP) as it arrives. Decapsulation then only
 * invalidates the outer headers, and the deparser's fixed order (see the
 * tops) puts every encapsulation in the right place: downstream PPPoE pushes
 * pppoe + encap_ppp in front of the untouched `ipv4`/`ipv6`, so transit
 * headers behind it (even UDP to port 1701) keep their order. IPv6 addresses are split in 64-bit
 * halves: SWX moves and keys at most 64-bit fields, and /64 is the unit of
 * subscriber IPv6 anyway.
 */
#ifndef BNG_HEADERS_P4
#define BNG_HEADERS_P4

#include "defines.p4"

/* Prepended by the DPDK switch to every received frame when the program
 * declares this header type: the PNA target gives a program no packet
 * length, and without it truncated frames cannot be told apart. */
header bsw_frame_length_h {
    bit<16> length;      /* bytes of the frame after this prelude */
    bit<16> reserved;
}

@controller_header("packet_in")
header packet_in_h {
    port_t ingress_port;
    line_id_t line_id;
    bit<16> session_id;  /* PPPoE session id, or L2TP local session id */
    PuntReason_t reason;
    bit<8> _pad;
}

@controller_header("packet_out")
header packet_out_h {
    port_t egress_port;  /* the frame that follows leaves this port untouched */
}

header ethernet_h {
    bit<48> dst_addr;
    bit<48> src_addr;
    bit<16> ether_type;
}

header vlan_h {
    bit<16> tci;         /* PCP(3) DEI(1) VID(12) */
    bit<16> ether_type;
}

header pppoe_h {
    bit<8> ver_type;     /* 0x11 */
    bit<8> code;         /* 0 for session data */
    bit<16> session_id;
    bit<16> length;      /* PPPoE payload: PPP protocol + information */
}

header ppp_address_control_h {
    bit<16> address_control;  /* 0xff03 */
}

header ppp_h {
    bit<16> protocol;
}

header arp_h {
    bit<16> htype;
    bit<16> ptype;
    bit<8> hlen;
    bit<8> plen;
    bit<16> oper;
    bit<48> sha;
    bit<32> spa;
    bit<48> tha;
    bit<32> tpa;
}

header ipv4_h {
    bit<8> version_ihl;        /* 0x45: the core forwards no IPv4 options */
    bit<8> diffserv;
    bit<16> total_len;
    bit<16> identification;
    bit<16> flags_frag;        /* flags(3) fragment offset(13) */
    bit<8> ttl;
    bit<8> protocol;
    bit<16> checksum;
    bit<32> src_addr;
    bit<32> dst_addr;
}

/* The IPv4 header fields its checksum covers, the checksum itself aside, for
 * targets whose checksum extern takes a field list (TNA). The PNA top hands
 * SWX the whole 20-byte header instead. */
#define IPV4_CHECKSUM_FIELDS(H) H.version_ihl, H.diffserv, H.total_len, H.identification, \
    H.flags_frag, H.ttl, H.protocol, H.src_addr, H.dst_addr

header ipv6_h {
    bit<32> version_tc_flow;
    bit<16> payload_len;
    bit<8> next_hdr;
    bit<8> hop_limit;
    bit<64> src_hi;
    bit<64> src_lo;
    bit<64> dst_hi;
    bit<64> dst_lo;
}

/* The first 26 bytes of an IPv6 header, looked ahead at by the parser to
 * classify the packet (version, destination scope) without metadata. */
header ipv6_peek_h {
    bit<8> version_tc;   /* version(4) traffic class(4 of 8) */
    bit<56> rest;
    bit<64> src_hi;
    bit<64> src_lo;
    bit<16> dst_w0;      /* first 16 bits of the destination */
}

header udp_h {
    bit<16> src_port;
    bit<16> dst_port;
    bit<16> length;
    bit<16> checksum;
}

header tcp_h {
    bit<16> src_port;
    bit<16> dst_port;
    bit<32> seq;
    bit<32> ack;
    bit<8> data_offset;  /* data offset(4) reserved(4) */
    bit<8> flags;
    bit<16> window;
    bit<16> checksum;
    bit<16> urgent;
}

/* The first TCP option when it is MSS, as every common stack sends it. */
header tcp_mss_h {
    bit<8> kind;
    bit<8> len;
    bit<16> mss;
}

/* L2TPv2 data/control header (RFC 2661 3.1), optional parts split out. */
header l2tp_h {
    bit<8> flags;        /* T L x x S x O P */
    bit<8> version;      /* x x x x Ver(4) */
}

header l2tp_length_h {
    bit<16> length;
}

header l2tp_ids_h {
    bit<16> tunnel_id;
    bit<16> session_id;
}

header l2tp_seq_h {
    bit<16> ns;
    bit<16> nr;
}

header l2tp_offset_h {
    bit<16> offset_size;
}

struct headers_t {
    bsw_frame_length_h frame;
    packet_out_h packet_out;
    packet_in_h packet_in;
    ethernet_h ethernet;
    vlan_h s_tag;
    vlan_h c_tag;
    pppoe_h pppoe;
    ppp_h encap_ppp;       /* PPP protocol pushed by downstream PPPoE encapsulation */
    arp_h arp;
    ipv4_h ipv4;
    ipv6_h ipv6;
    udp_h udp;
    l2tp_h l2tp;
    l2tp_length_h l2tp_length;
    l2tp_ids_h l2tp_ids;
    l2tp_seq_h l2tp_seq;
    l2tp_offset_h l2tp_offset;
    ppp_address_control_h ppp_ac;
    ppp_h ppp;
    ipv4_h inner_ipv4;
    ipv6_h inner_ipv6;
    tcp_h tcp;
    tcp_mss_h tcp_mss;
}

/* Everything the core reads from and hands back to the architecture top.
 *
 * SWX instructions address metadata with an 8-bit byte offset, so this
 * struct, with what p4c-dpdk adds to it, must stay under 256 bytes (the
 * switch refuses a spec that does not). Three rules keep it there:
 *  - Lookup keys are copied from the headers by the parser and declared
 *    next to each other as the tables read them: p4c-dpdk copies the keys of
 *    an exact table into fresh fields unless they are adjacent fields of one
 *    struct.
 *  - Values the core computes with start from fields the parser set and are
 *    changed in place: p4c propagates a value assigned in the control into
 *    its uses, and every compound expression it recreates there gets its own
 *    field.
 *  - No narrowing casts (p4c-dpdk spends three fields on each).
 * All fields are whole bytes and at most 64 bits (SWX metadata).
 */
struct bng_meta_t {
    /* set by the top */
    bit<32> frame_len;        /* 0xffff where the architecture cannot tell */

    /* set by the parser: lengths for the core's sanity checks */
    bit<32> parsed_len;       /* bytes the parser extracted after the prelude */
    bit<32> l2_len;           /* Ethernet + VLAN tags */
    bit<32> claim_len;        /* length field of the first header after L2
                               * (PPPoE length, IPv4 total length, IPv6
                               * payload length); the core adds the headers
                               * it does not count to compare with frame_len */
    bit<16> inner_len;        /* IP length field of IP carried in PPP */
    bit<16> ppp_len;          /* L2TP: the UDP length, turned into the bytes
                               * of PPP carried by the core */
    bit<16> l2tp_len;         /* L2TP header bytes (with optional fields) */
    bit<8> l2tp_class;        /* L2TP_DATA, L2TP_CONTROL, L2TP_MALFORMED, L2TP_OFFSET */
    bit<8> ipv6_class;        /* of the last IPv6 header: IPV6_* below */

    /* lookup keys, in the order the tables need them adjacent:
     * my_station (dst_mac, in_port), line_map (in_port, s_vid, c_vid),
     * pppoe_session (in_port, s_vid, c_vid, session_id, src_mac),
     * pppoe_up_v4 (the same + src_ipv4), l2tp_up_v4 (src_ipv4, local_ip,
     * peer_ip, tunnel_id, l2tp_session_id), l2tp_session (local_ip ..
     * l2tp_session_id): src_ipv4 sits between the PPPoE and the L2TP keys,
     * so the L2TP session id has a field of its own. ipv6_antispoof
     * (sess_idx, src_v6_hi) */
    bit<48> dst_mac;
    port_t in_port;           /* set by the top */
    bit<16> s_vid;            /* received outer VLAN id; downstream: to push */
    bit<16> c_vid;
    bit<16> session_id;       /* PPPoE session id or L2TP session id (packet_in) */
    bit<48> src_mac;
    bit<32> src_ipv4;         /* subscriber IPv4 source (IP in PPP) */
    bit<32> local_ip;         /* outer IPv4 destination, or ARP target (local_ipv4) */
    bit<32> peer_ip;          /* outer IPv4 source */
    bit<16> tunnel_id;        /* L2TP tunnel id */
    bit<16> l2tp_session_id;  /* L2TP session id */
    line_id_t line_id;        /* line_map, or the session's own entry */
    sess_idx_t sess_idx;      /* 0: no session counters/meters */
    bit<64> src_v6_hi;        /* subscriber IPv6 source /64 (IP in PPP) */

    /* working state of the core */
    bit<32> lookup_ipv4;      /* address looked up in local_ipv4 and fib_v4 */
    bit<64> lookup_v6_hi;     /* /64 looked up in fib_v6 */
    bit<16> mss_clamp;        /* 0: no clamping */
    bit<16> max_len;          /* downstream: the session's largest IP length field */
    bit<8> is_local;
    bit<8> no_lns;            /* local_ipv4: no LNS session terminates there */
    bit<8> my_station;
    bit<8> job;               /* what the classification decided to do (see core) */
    nexthop_id_t nexthop_id;
    tunnel_idx_t tunnel_idx;
    bit<16> peer_session_id;
    bit<16> s_tpid;
    bit<16> pppoe_session_id; /* downstream: the session id to push */
    bit<16> l3_type;          /* ethertype of what follows the L2 header on egress */

    /* the verdict, carried out by the top */
    Verdict_t verdict;
    DropReason_t drop_reason;
    PuntReason_t punt_reason;
    Direction_t direction;
    port_t out_port;
    bit<32> sess_bytes;       /* bytes counted against the session (PPP payload) */
    bit<32> w;                /* the top's scratch: counter and meter indices */
    bit<32> weight;           /* the top's scratch: what a packet weighs in a meter */
    /* checksums: verified and recomputed by the top (PNA: InternetChecksum
     * in the control; TNA: Checksum in parser/deparser) */
    bit<8> ipv4_csum_bad;
    bit<8> inner_ipv4_csum_bad;
    bit<8> ipv4_csum_update;
    bit<8> inner_ipv4_csum_update;
    bit<8> mss_update;        /* rewrite tcp_mss.mss to mss_clamp, fix TCP checksum */
    bit<16> tcp_csum_residual; /* TNA: the TCP checksum's sum less checksum and MSS */
    bit<16> v4_len_room;      /* TNA: max_len - IPv4 total length (negative: over) */
    bit<16> v6_len_room;      /* TNA: max_len - IPv6 payload length */
}

#endif
