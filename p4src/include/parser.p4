/*
 * The BNG parser from the Ethernet header on, architecture-neutral: each
 * top extracts its own prelude (PNA: frame length and packet_out; TNA:
 * intrinsic metadata) and then applies BngParser.
 *
 * Besides extracting, the parser copies every lookup key into metadata and
 * seeds the length fields the core checks (see bng_meta_t for why), and
 * classifies what only a masked look can tell (L2TP flags, IPv6 version and
 * destination scope) so that the core compares whole fields only.
 * meta.parsed_len counts extracted bytes so the core can drop frames
 * shorter than their headers (SWX extracts without bounds checks).
 */
#ifndef BNG_PARSER_P4
#define BNG_PARSER_P4

#include "headers.p4"

parser BngParser(packet_in pkt, inout headers_t hdr, inout bng_meta_t meta) {
    ipv6_peek_h ipv6_peek;
    BNG_PARSER_CHECKSUMS

    state start {
        meta.parsed_len = 14;
        meta.l2_len = 14;
        meta.claim_len = 0;
        meta.l2tp_len = 0;
        meta.l2tp_class = L2TP_DATA;
        meta.ipv6_class = IPV6_UNICAST;
        meta.s_vid = 0;
        meta.c_vid = 0;
        meta.session_id = 0;
        pkt.extract(hdr.ethernet);
        meta.dst_mac = hdr.ethernet.dst_addr;
        meta.src_mac = hdr.ethernet.src_addr;
        transition select(hdr.ethernet.ether_type) {
            ETHERTYPE_QINQ: parse_s_tag;
            ETHERTYPE_VLAN: parse_s_tag;
            ETHERTYPE_PPPOE_DISCOVERY: parse_pppoe_discovery;
            ETHERTYPE_PPPOE_SESSION: parse_pppoe_session;
            ETHERTYPE_IPV4: parse_ipv4;
            ETHERTYPE_IPV6: parse_ipv6;
            ETHERTYPE_ARP: parse_arp;
            default: accept;
        }
    }

    /* A single tag is the line's s-tag (c_vid 0); QinQ gives both. */
    state parse_s_tag {
        pkt.extract(hdr.s_tag);
        BNG_PARSER_ADD(meta.parsed_len, 4)
        BNG_PARSER_ADD(meta.l2_len, 4)
        BNG_PARSER_VID(meta.s_vid, hdr.s_tag.tci)
        transition select(hdr.s_tag.ether_type) {
            ETHERTYPE_VLAN: parse_c_tag;
            ETHERTYPE_PPPOE_DISCOVERY: parse_pppoe_discovery;
            ETHERTYPE_PPPOE_SESSION: parse_pppoe_session;
            ETHERTYPE_IPV4: parse_ipv4;
            ETHERTYPE_IPV6: parse_ipv6;
            ETHERTYPE_ARP: parse_arp;
            default: accept;
        }
    }

    state parse_c_tag {
        pkt.extract(hdr.c_tag);
        BNG_PARSER_ADD(meta.parsed_len, 4)
        BNG_PARSER_ADD(meta.l2_len, 4)
        BNG_PARSER_VID(meta.c_vid, hdr.c_tag.tci)
        transition select(hdr.c_tag.ether_type) {
            ETHERTYPE_PPPOE_DISCOVERY: parse_pppoe_discovery;
            ETHERTYPE_PPPOE_SESSION: parse_pppoe_session;
            ETHERTYPE_IPV4: parse_ipv4;
            ETHERTYPE_IPV6: parse_ipv6;
            ETHERTYPE_ARP: parse_arp;
            default: accept;
        }
    }

    state parse_pppoe_discovery {
        pkt.extract(hdr.pppoe);
        BNG_PARSER_ADD(meta.parsed_len, 6)
        meta.claim_len = (bit<32>) hdr.pppoe.length;
        meta.session_id = hdr.pppoe.session_id;
        transition accept;
    }

    state parse_pppoe_session {
        pkt.extract(hdr.pppoe);
        pkt.extract(hdr.ppp);
        BNG_PARSER_ADD(meta.parsed_len, 8)
        meta.claim_len = (bit<32>) hdr.pppoe.length;
        meta.session_id = hdr.pppoe.session_id;
        transition select(hdr.ppp.protocol) {
            PPP_IPV4: parse_inner_ipv4;
            PPP_IPV6: parse_inner_ipv6;
            default: accept;
        }
    }

    state parse_arp {
        pkt.extract(hdr.arp);
        meta.local_ip = hdr.arp.tpa;
        BNG_PARSER_ADD(meta.parsed_len, 28)
        transition accept;
    }

    /* Only option-less, unfragmented IPv4 is parsed further; the core drops
     * IPv4 with options. */
    state parse_ipv4 {
        pkt.extract(hdr.ipv4);
        BNG_PARSED_IPV4
        BNG_PARSER_ADD(meta.parsed_len, 20)
        meta.claim_len = (bit<32>) hdr.ipv4.total_len;
        meta.local_ip = hdr.ipv4.dst_addr;
        meta.peer_ip = hdr.ipv4.src_addr;
        transition select(hdr.ipv4.version_ihl, hdr.ipv4.flags_frag, hdr.ipv4.protocol) {
            (0x45, 0x0000 &&& 0x1fff, IP_PROTO_UDP): peek_udp;
            (0x45, 0x0000 &&& 0x1fff, IP_PROTO_TCP): parse_tcp;
            default: accept;
        }
    }

    /* Only L2TP's UDP header is extracted: any other UDP stays payload, so
     * that a downstream encapsulation can push headers in front of it. */
    state peek_udp {
        transition select(pkt.lookahead<udp_h>().dst_port) {
            L2TP_PORT: parse_udp;
            default: accept;
        }
    }

    state parse_ipv6 {
        ipv6_peek = pkt.lookahead<ipv6_peek_h>();
        transition select(ipv6_peek.version_tc, ipv6_peek.dst_w0) {
            (0x60 &&& 0xf0, 0xfe80 &&& 0xffc0): ipv6_link_local;
            (0x60 &&& 0xf0, 0xff00 &&& 0xff00): ipv6_multicast;
            (0x60 &&& 0xf0, _): extract_ipv6;
            default: ipv6_bad_version;
        }
    }

    state ipv6_link_local {
        meta.ipv6_class = IPV6_LINK_LOCAL;
        transition extract_ipv6;
    }

    state ipv6_multicast {
        meta.ipv6_class = IPV6_MULTICAST;
        transition extract_ipv6;
    }

    state ipv6_bad_version {
        meta.ipv6_class = IPV6_BAD_VERSION;
        transition extract_ipv6;
    }

    state extract_ipv6 {
        pkt.extract(hdr.ipv6);
        BNG_PARSER_ADD(meta.parsed_len, 40)
        meta.claim_len = (bit<32>) hdr.ipv6.payload_len;
        transition select(hdr.ipv6.next_hdr) {
            IP_PROTO_TCP: parse_tcp;
            default: accept;
        }
    }

    state parse_udp {
        pkt.extract(hdr.udp);
        BNG_PARSER_ADD(meta.parsed_len, 8)
        meta.ppp_len = hdr.udp.length;
        transition parse_l2tp;
    }

    /* L2TPv2: control messages (T) are punted whole; data messages are
     * parsed through their optional Length, Ns/Nr and Offset fields. */
    state parse_l2tp {
        pkt.extract(hdr.l2tp);
        BNG_PARSER_ADD(meta.parsed_len, 2)
        meta.l2tp_len = 2;
        transition select(hdr.l2tp.version, hdr.l2tp.flags) {
            (L2TP_VERSION &&& L2TP_VERSION_MASK, L2TP_FLAG_T &&& L2TP_FLAG_T): l2tp_control;
            (L2TP_VERSION &&& L2TP_VERSION_MASK, L2TP_FLAG_L &&& L2TP_FLAG_L): extract_l2tp_length;
            (L2TP_VERSION &&& L2TP_VERSION_MASK, _): parse_l2tp_ids;
            default: l2tp_bad_version;
        }
    }

    state l2tp_control {
        meta.l2tp_class = L2TP_CONTROL;
        transition accept;
    }

    state l2tp_bad_version {
        meta.l2tp_class = L2TP_MALFORMED;
        transition accept;
    }

    state extract_l2tp_length {
        pkt.extract(hdr.l2tp_length);
        BNG_PARSER_ADD(meta.parsed_len, 2)
        BNG_PARSER_ADD(meta.l2tp_len, 2)
        transition parse_l2tp_ids;
    }

    state parse_l2tp_ids {
        pkt.extract(hdr.l2tp_ids);
        BNG_PARSER_ADD(meta.parsed_len, 4)
        BNG_PARSER_ADD(meta.l2tp_len, 4)
        meta.tunnel_id = hdr.l2tp_ids.tunnel_id;
        meta.session_id = hdr.l2tp_ids.session_id;
        meta.l2tp_session_id = hdr.l2tp_ids.session_id;   /* the lookups' copy */
        /* Tunnel id 0 is an SCCRQ's and session id 0 a tunnel's own control
         * messages' (RFC 2661 3.1): a data message with either is malformed,
         * dropped rather than punted as PPP of no session. Two states: on
         * Tofino a state matches at most 4 bytes, the flags' byte included
         * while it stays live. */
        transition select(hdr.l2tp_ids.tunnel_id) {
            0: l2tp_zero_id;
            default: check_l2tp_session_id;
        }
    }

    state check_l2tp_session_id {
        transition select(hdr.l2tp_ids.session_id, hdr.l2tp.flags) {
            (0, _): l2tp_zero_id;
            (_, L2TP_FLAG_S &&& L2TP_FLAG_S): parse_l2tp_seq;
            default: parse_l2tp_offset;
        }
    }

    state l2tp_zero_id {
        meta.l2tp_class = L2TP_MALFORMED;
        transition accept;
    }

    state parse_l2tp_seq {
        pkt.extract(hdr.l2tp_seq);
        BNG_PARSER_ADD(meta.parsed_len, 4)
        BNG_PARSER_ADD(meta.l2tp_len, 4)
        transition parse_l2tp_offset;
    }

    state parse_l2tp_offset {
        transition select(hdr.l2tp.flags) {
            L2TP_FLAG_O &&& L2TP_FLAG_O: extract_l2tp_offset;
            default: parse_l2tp_ppp;
        }
    }

    /* Offset padding is not skipped: a non-zero Offset Size is dropped by
     * the core as unsupported (no LAC we know of sends one). */
    state extract_l2tp_offset {
        pkt.extract(hdr.l2tp_offset);
        BNG_PARSER_ADD(meta.parsed_len, 2)
        BNG_PARSER_ADD(meta.l2tp_len, 2)
        transition select(hdr.l2tp_offset.offset_size) {
            0: parse_l2tp_ppp;
            default: l2tp_offset_unsupported;
        }
    }

    state l2tp_offset_unsupported {
        meta.l2tp_class = L2TP_OFFSET;
        transition accept;
    }

    state parse_l2tp_ppp {
        transition select(pkt.lookahead<bit<16>>()) {
            PPP_ADDRESS_CONTROL: parse_ppp_ac;
            default: parse_l2tp_ppp_protocol;
        }
    }

    state parse_ppp_ac {
        pkt.extract(hdr.ppp_ac);
        BNG_PARSER_ADD(meta.parsed_len, 2)
        transition parse_l2tp_ppp_protocol;
    }

    state parse_l2tp_ppp_protocol {
        pkt.extract(hdr.ppp);
        BNG_PARSER_ADD(meta.parsed_len, 2)
        transition select(hdr.ppp.protocol) {
            PPP_IPV4: parse_inner_ipv4;
            PPP_IPV6: parse_inner_ipv6;
            default: accept;
        }
    }

    state parse_inner_ipv4 {
        pkt.extract(hdr.inner_ipv4);
        BNG_PARSED_INNER_IPV4
        BNG_PARSER_ADD(meta.parsed_len, 20)
        meta.inner_len = hdr.inner_ipv4.total_len;
        meta.src_ipv4 = hdr.inner_ipv4.src_addr;
        transition select(hdr.inner_ipv4.version_ihl, hdr.inner_ipv4.flags_frag,
                          hdr.inner_ipv4.protocol) {
            (0x45, 0x0000 &&& 0x1fff, IP_PROTO_TCP): parse_tcp;
            default: accept;
        }
    }

    state parse_inner_ipv6 {
        ipv6_peek = pkt.lookahead<ipv6_peek_h>();
        transition select(ipv6_peek.version_tc, ipv6_peek.dst_w0) {
            (0x60 &&& 0xf0, 0xfe80 &&& 0xffc0): inner_ipv6_link_local;
            (0x60 &&& 0xf0, 0xff00 &&& 0xff00): inner_ipv6_multicast;
            (0x60 &&& 0xf0, _): extract_inner_ipv6;
            default: inner_ipv6_bad_version;
        }
    }

    state inner_ipv6_link_local {
        meta.ipv6_class = IPV6_LINK_LOCAL;
        transition extract_inner_ipv6;
    }

    state inner_ipv6_multicast {
        meta.ipv6_class = IPV6_MULTICAST;
        transition extract_inner_ipv6;
    }

    state inner_ipv6_bad_version {
        meta.ipv6_class = IPV6_BAD_VERSION;
        transition extract_inner_ipv6;
    }

    state extract_inner_ipv6 {
        pkt.extract(hdr.inner_ipv6);
        BNG_PARSER_ADD(meta.parsed_len, 40)
        meta.inner_len = hdr.inner_ipv6.payload_len;
        meta.src_v6_hi = hdr.inner_ipv6.src_hi;
        transition select(hdr.inner_ipv6.next_hdr) {
            IP_PROTO_TCP: parse_tcp;
            default: accept;
        }
    }

    /* MSS is looked at only when the TCP header has options. */
    state parse_tcp {
        pkt.extract(hdr.tcp);
        BNG_PARSED_TCP
        BNG_PARSER_ADD(meta.parsed_len, 20)
        transition select(hdr.tcp.data_offset) {
            0x50 &&& 0xf0: accept;
            default: parse_tcp_mss;
        }
    }

    state parse_tcp_mss {
        pkt.extract(hdr.tcp_mss);
        BNG_PARSED_TCP_MSS
        BNG_PARSER_ADD(meta.parsed_len, 4)
        transition accept;
    }
}

#endif
