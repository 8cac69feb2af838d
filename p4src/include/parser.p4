/*
 * The BNG parser from the Ethernet header on, architecture-neutral: each
 * top extracts its own prelude (PNA: frame length and packet_out; TNA:
 * intrinsic metadata) and then applies BngParser.
 *
 * meta.parsed_len counts extracted bytes so the core can drop frames
 * shorter than their headers (SWX extracts without bounds checks).
 */
#ifndef BNG_PARSER_P4
#define BNG_PARSER_P4

#include "headers.p4"

parser BngParser(packet_in pkt, inout headers_t hdr, inout bng_meta_t meta) {
    state start {
        meta.parsed_len = 14;
        meta.l2_len = 14;
        meta.l2tp_len = 0;
        meta.l2tp_bad = 0;
        pkt.extract(hdr.ethernet);
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
        meta.parsed_len = meta.parsed_len + 4;
        meta.l2_len = meta.l2_len + 4;
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
        meta.parsed_len = meta.parsed_len + 4;
        meta.l2_len = meta.l2_len + 4;
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
        meta.parsed_len = meta.parsed_len + 6;
        transition accept;
    }

    state parse_pppoe_session {
        pkt.extract(hdr.pppoe);
        pkt.extract(hdr.ppp);
        meta.parsed_len = meta.parsed_len + 8;
        transition select(hdr.ppp.protocol) {
            PPP_IPV4: parse_inner_ipv4;
            PPP_IPV6: parse_inner_ipv6;
            default: accept;
        }
    }

    state parse_arp {
        pkt.extract(hdr.arp);
        meta.parsed_len = meta.parsed_len + 28;
        transition accept;
    }

    /* Only option-less IPv4 is parsed further; the core drops the rest. */
    state parse_ipv4 {
        pkt.extract(hdr.ipv4);
        meta.parsed_len = meta.parsed_len + 20;
        transition select(hdr.ipv4.version_ihl_tos, hdr.ipv4.flags_frag, hdr.ipv4.ttl_protocol) {
            (0x4500 &&& 0xff00, 0x0000 &&& 0x1fff, 0x0011 &&& 0x00ff): peek_udp;
            (0x4500 &&& 0xff00, 0x0000 &&& 0x1fff, 0x0006 &&& 0x00ff): parse_tcp;
            default: accept;
        }
    }

    /* Only L2TP's UDP header is extracted: any other UDP stays payload, so
     * that a downstream encapsulation can push headers in front of it. */
    state peek_udp {
        transition select(pkt.lookahead<bit<32>>()) {
            32w1701 &&& 32w0xffff: parse_udp;
            default: accept;
        }
    }

    state parse_ipv6 {
        pkt.extract(hdr.ipv6);
        meta.parsed_len = meta.parsed_len + 40;
        transition select(hdr.ipv6.next_hdr) {
            IP_PROTO_TCP: parse_tcp;
            default: accept;
        }
    }

    state parse_udp {
        pkt.extract(hdr.udp);
        meta.parsed_len = meta.parsed_len + 8;
        transition parse_l2tp;
    }

    /* L2TPv2: control messages (T) are punted whole; data messages are
     * parsed through their optional Length, Ns/Nr and Offset fields. */
    state parse_l2tp {
        pkt.extract(hdr.l2tp);
        meta.parsed_len = meta.parsed_len + 2;
        meta.l2tp_len = 2;
        transition select(hdr.l2tp.flags_version) {
            L2TP_FLAG_T &&& L2TP_FLAG_T: accept;
            L2TP_VERSION &&& L2TP_VERSION_MASK: parse_l2tp_length;
            default: l2tp_bad;
        }
    }

    state l2tp_bad {
        meta.l2tp_bad = 1;    /* not version 2 */
        transition accept;
    }

    state parse_l2tp_length {
        transition select(hdr.l2tp.flags_version) {
            L2TP_FLAG_L &&& L2TP_FLAG_L: extract_l2tp_length;
            default: parse_l2tp_ids;
        }
    }

    state extract_l2tp_length {
        pkt.extract(hdr.l2tp_length);
        meta.parsed_len = meta.parsed_len + 2;
        meta.l2tp_len = meta.l2tp_len + 2;
        transition parse_l2tp_ids;
    }

    state parse_l2tp_ids {
        pkt.extract(hdr.l2tp_ids);
        meta.parsed_len = meta.parsed_len + 4;
        meta.l2tp_len = meta.l2tp_len + 4;
        transition select(hdr.l2tp.flags_version) {
            L2TP_FLAG_S &&& L2TP_FLAG_S: parse_l2tp_seq;
            default: parse_l2tp_offset;
        }
    }

    state parse_l2tp_seq {
        pkt.extract(hdr.l2tp_seq);
        meta.parsed_len = meta.parsed_len + 4;
        meta.l2tp_len = meta.l2tp_len + 4;
        transition parse_l2tp_offset;
    }

    state parse_l2tp_offset {
        transition select(hdr.l2tp.flags_version) {
            L2TP_FLAG_O &&& L2TP_FLAG_O: extract_l2tp_offset;
            default: parse_l2tp_ppp;
        }
    }

    /* Offset padding is not skipped: a non-zero Offset Size is dropped by
     * the core as unsupported (no LAC we know of sends one). */
    state extract_l2tp_offset {
        pkt.extract(hdr.l2tp_offset);
        meta.parsed_len = meta.parsed_len + 2;
        meta.l2tp_len = meta.l2tp_len + 2;
        transition select(hdr.l2tp_offset.offset_size) {
            0: parse_l2tp_ppp;
            default: l2tp_offset_unsupported;
        }
    }

    state l2tp_offset_unsupported {
        meta.l2tp_bad = 2;
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
        meta.parsed_len = meta.parsed_len + 2;
        transition parse_l2tp_ppp_protocol;
    }

    state parse_l2tp_ppp_protocol {
        pkt.extract(hdr.ppp);
        meta.parsed_len = meta.parsed_len + 2;
        transition select(hdr.ppp.protocol) {
            PPP_IPV4: parse_inner_ipv4;
            PPP_IPV6: parse_inner_ipv6;
            default: accept;
        }
    }

    state parse_inner_ipv4 {
        pkt.extract(hdr.inner_ipv4);
        meta.parsed_len = meta.parsed_len + 20;
        transition select(hdr.inner_ipv4.version_ihl_tos, hdr.inner_ipv4.flags_frag,
                          hdr.inner_ipv4.ttl_protocol) {
            (0x4500 &&& 0xff00, 0x0000 &&& 0x1fff, 0x0006 &&& 0x00ff): parse_tcp;
            default: accept;
        }
    }

    state parse_inner_ipv6 {
        pkt.extract(hdr.inner_ipv6);
        meta.parsed_len = meta.parsed_len + 40;
        transition select(hdr.inner_ipv6.next_hdr) {
            IP_PROTO_TCP: parse_tcp;
            default: accept;
        }
    }

    /* MSS is looked at only when the TCP header has options. */
    state parse_tcp {
        pkt.extract(hdr.tcp);
        meta.parsed_len = meta.parsed_len + 20;
        transition select(hdr.tcp.data_offset) {
            0x50 &&& 0xf0: accept;
            default: parse_tcp_mss;
        }
    }

    state parse_tcp_mss {
        pkt.extract(hdr.tcp_mss);
        meta.parsed_len = meta.parsed_len + 4;
        transition accept;
    }
}

#endif
