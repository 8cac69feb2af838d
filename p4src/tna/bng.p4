/*
 * The BNG for Tofino (TNA). Only this file differs from the DPDK build: it
 * maps Tofino's intrinsic metadata to the core, and holds the counters and
 * meters in their TNA flavour (lengths come from the hardware).
 *
 * Tofino gives ingress no frame length, so meta.frame_len is 0xffff and
 * the core's truncation checks pass; the MAC drops runt frames instead.
 */
#include <core.p4>
#include <tna.p4>

/* Tofino's checksum units: IPv4 header checksums are verified as the
 * headers are parsed (verify() is true when the sum is right); for MSS
 * clamping the parser deposits the TCP checksum's sum without the checksum
 * and MSS words, and the deparser adds the new MSS back (RFC 1624). */
#define BNG_PARSER_CHECKSUMS \
    Checksum() ipv4_checksum; \
    Checksum() inner_ipv4_checksum; \
    Checksum() tcp_checksum;
#define BNG_PARSED_IPV4 \
    ipv4_checksum.add(hdr.ipv4); \
    meta.ipv4_csum_bad = (bit<8>) (bit<1>) !ipv4_checksum.verify();
#define BNG_PARSED_INNER_IPV4 \
    inner_ipv4_checksum.add(hdr.inner_ipv4); \
    meta.inner_ipv4_csum_bad = (bit<8>) (bit<1>) !inner_ipv4_checksum.verify();
#define BNG_PARSED_TCP_MSS \
    tcp_checksum.subtract({hdr.tcp.checksum, hdr.tcp_mss.mss}); \
    tcp_checksum.subtract_all_and_deposit(meta.tcp_csum_residual);

#include "../include/bng.p4"

/* The CPU PCIe port of a Tofino 1 (pipe 0). */
const PortId_t TOFINO_CPU_PORT = 192;

parser BngIngressParser(packet_in pkt, out headers_t hdr, out bng_meta_t meta,
                        out ingress_intrinsic_metadata_t ig_intr_md) {
    BngParser() bng_parser;

    state start {
        pkt.extract(ig_intr_md);
        pkt.advance(PORT_METADATA_SIZE);
        meta.frame_len = 0xffff;
        meta.ipv4_csum_bad = 0;
        meta.inner_ipv4_csum_bad = 0;
        meta.tcp_csum_residual = 0;
        meta.in_port = (port_t) ig_intr_md.ingress_port;
        transition select(ig_intr_md.ingress_port) {
            TOFINO_CPU_PORT: parse_packet_out;
            default: parse_bng;
        }
    }

    state parse_packet_out {
        pkt.extract(hdr.packet_out);
        transition accept;
    }

    state parse_bng {
        bng_parser.apply(pkt, hdr, meta);
        transition accept;
    }
}

control BngIngressTop(inout headers_t hdr, inout bng_meta_t meta,
                      in ingress_intrinsic_metadata_t ig_intr_md,
                      in ingress_intrinsic_metadata_from_parser_t ig_prsr_md,
                      inout ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md,
                      inout ingress_intrinsic_metadata_for_tm_t ig_tm_md) {
    Counter<bit<64>, bit<32>>(BNG_MAX_SESSIONS, CounterType_t.PACKETS_AND_BYTES) session_up;
    Counter<bit<64>, bit<32>>(BNG_MAX_SESSIONS, CounterType_t.PACKETS_AND_BYTES) session_down;
    Counter<bit<64>, bit<8>>(32, CounterType_t.PACKETS_AND_BYTES) drops;
    Counter<bit<64>, bit<8>>(32, CounterType_t.PACKETS_AND_BYTES) punts;
    Meter<bit<32>>(BNG_MAX_SESSIONS, MeterType_t.BYTES) session_meter_up;
    Meter<bit<32>>(BNG_MAX_SESSIONS, MeterType_t.BYTES) session_meter_down;
    Meter<bit<8>>(32, MeterType_t.PACKETS) punt_meter;

    BngIngress() bng;

    apply {
        if (hdr.packet_out.isValid()) {
            ig_tm_md.ucast_egress_port = (PortId_t) hdr.packet_out.egress_port[8:0];
            hdr.packet_out.setInvalid();
            ig_tm_md.bypass_egress = 1;
        } else {
            /* meta.*ipv4_csum_bad: set by the parser (BNG_PARSED_*) */
            bng.apply(hdr, meta);
            if (meta.mss_update == 1) {
                hdr.tcp_mss.mss = meta.mss_clamp;   /* TCP checksum: deparser */
            }
            bit<8> color = 0;
            if (meta.verdict == Verdict_t.FORWARD && meta.sess_idx != 0) {
                if (meta.direction == Direction_t.UPSTREAM) {
                    color = session_meter_up.execute(meta.sess_idx);
                } else {
                    color = session_meter_down.execute(meta.sess_idx);
                }
                if (color == MeterColor_t.RED) {
                    meta.verdict = Verdict_t.DROP;
                    meta.drop_reason = DropReason_t.POLICER;
                } else if (meta.direction == Direction_t.UPSTREAM) {
                    session_up.count(meta.sess_idx);
                } else {
                    session_down.count(meta.sess_idx);
                }
            } else if (meta.verdict == Verdict_t.PUNT) {
                color = punt_meter.execute((bit<8>) meta.punt_reason);
                if (color == MeterColor_t.RED) {
                    meta.verdict = Verdict_t.DROP;
                    meta.drop_reason = DropReason_t.PUNT_POLICED;
                } else {
                    punts.count((bit<8>) meta.punt_reason);
                }
            }

            if (meta.verdict == Verdict_t.FORWARD) {
                ig_tm_md.ucast_egress_port = (PortId_t) meta.out_port[8:0];
            } else if (meta.verdict == Verdict_t.PUNT) {
                hdr.packet_in.setValid();
                hdr.packet_in.ingress_port = meta.in_port;
                hdr.packet_in.line_id = meta.line_id;
                hdr.packet_in.session_id = meta.session_id;
                hdr.packet_in.reason = meta.punt_reason;
                hdr.packet_in._pad = 0;
                ig_tm_md.ucast_egress_port = TOFINO_CPU_PORT;
            } else {
                drops.count((bit<8>) meta.drop_reason);
                ig_dprsr_md.drop_ctl = 1;
            }
            ig_tm_md.bypass_egress = 1;
        }
    }
}

control BngIngressDeparser(packet_out pkt, inout headers_t hdr, in bng_meta_t meta,
                           in ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md) {
    Checksum() ipv4_csum;
    Checksum() inner_ipv4_csum;
    Checksum() tcp_csum;

    apply {
        if (meta.ipv4_csum_update == 1) {
            hdr.ipv4.checksum = ipv4_csum.update({IPV4_CHECKSUM_FIELDS(hdr.ipv4)});
        }
        if (meta.inner_ipv4_csum_update == 1) {
            hdr.inner_ipv4.checksum = inner_ipv4_csum.update({IPV4_CHECKSUM_FIELDS(hdr.inner_ipv4)});
        }
        if (meta.mss_update == 1) {
            hdr.tcp.checksum = tcp_csum.update({hdr.tcp_mss.mss, meta.tcp_csum_residual});
        }
        pkt.emit(hdr.packet_in);
        pkt.emit(hdr.ethernet);
        pkt.emit(hdr.s_tag);
        pkt.emit(hdr.c_tag);
        pkt.emit(hdr.pppoe);
        pkt.emit(hdr.encap_ppp);
        pkt.emit(hdr.arp);
        pkt.emit(hdr.ipv4);
        pkt.emit(hdr.ipv6);
        pkt.emit(hdr.udp);
        pkt.emit(hdr.l2tp);
        pkt.emit(hdr.l2tp_length);
        pkt.emit(hdr.l2tp_ids);
        pkt.emit(hdr.l2tp_seq);
        pkt.emit(hdr.l2tp_offset);
        pkt.emit(hdr.ppp_ac);
        pkt.emit(hdr.ppp);
        pkt.emit(hdr.inner_ipv4);
        pkt.emit(hdr.inner_ipv6);
        pkt.emit(hdr.tcp);
        pkt.emit(hdr.tcp_mss);
    }
}

struct empty_header_t { }
struct empty_metadata_t { }

parser EmptyEgressParser(packet_in pkt, out empty_header_t hdr, out empty_metadata_t meta,
                         out egress_intrinsic_metadata_t eg_intr_md) {
    state start {
        pkt.extract(eg_intr_md);
        transition accept;
    }
}

control EmptyEgress(inout empty_header_t hdr, inout empty_metadata_t meta,
                    in egress_intrinsic_metadata_t eg_intr_md,
                    in egress_intrinsic_metadata_from_parser_t eg_prsr_md,
                    inout egress_intrinsic_metadata_for_deparser_t eg_dprsr_md,
                    inout egress_intrinsic_metadata_for_output_port_t eg_oport_md) {
    apply { }
}

control EmptyEgressDeparser(packet_out pkt, inout empty_header_t hdr, in empty_metadata_t meta,
                            in egress_intrinsic_metadata_for_deparser_t eg_dprsr_md) {
    apply { }
}

Pipeline(BngIngressParser(), BngIngressTop(), BngIngressDeparser(),
         EmptyEgressParser(), EmptyEgress(), EmptyEgressDeparser()) pipe;

Switch(pipe) main;
