/*
 * The BNG for the DPDK SWX pipeline (PNA, compiled by p4c-dpdk).
 *
 * This top maps PNA to the core: the switch prepends the frame length
 * (bsw_frame_length_h) to every frame, the CPU port is a host port whose
 * frames carry packet_out, and the counters and meters live here because
 * their PNA/DPDK flavour (explicit lengths) is architecture-specific.
 *
 * Port 0 is the CPU port. Byte counts: `drops` and `punts` count whole
 * frames, the session counters and meters count PPP payload bytes (the IP
 * packet for IP traffic), which is what RADIUS accounting reports.
 */
#include <core.p4>
#include <dpdk/pna.p4>
/* Forwarding actions send to their port parameter directly. */
#define BNG_SET_OUTPUT_PORT(port) send_to_port((PortId_t) (port))
#include "../include/bng.p4"

/* p4c-dpdk hands PNA_MeterColor_t values (RED=0, GREEN=1, YELLOW=2, the
 * enum's declaration order) straight to DPDK's meter, whose colours are
 * rte_color (GREEN=0, YELLOW=1, RED=2); its colour-blind execute() even
 * passes 1, i.e. YELLOW. So this program spells DPDK's values: it passes
 * "RED" (0) as the input colour, which is DPDK's GREEN (colour-blind), and
 * tests the result against "YELLOW" (2), which is DPDK's RED. */
/* An IPv4 header's checksum after the core changed the header (update:
 * meta.ipv4_csum_update or inner_ipv4_csum_update).
 * A TTL one lower: RFC 1624 eqn. 3, HC' = ~(~HC + ~m + m'), where the word
 * (TTL, protocol) m became m - 0x0100, so ~m + m' is 0xfeff in ones'
 * complement; worked out, HC' = HC + 0x0100 below 0xfeff and HC - 0xfeff
 * from there (equal for all 65536 values; 0xfeff gives 0, never 0xffff).
 * In place, on the checksum field alone: summing the whole header after
 * the TTL's one-byte store waited for that store to reach the cache (a
 * CPU forwards a store to a load only if the one store holds all the
 * loaded bytes); through the InternetChecksum extern RFC 1624 measured
 * slower than summing, p4c-dpdk moving both operands through a scratch
 * header, where field arithmetic needs none.
 * A header written afresh: summed whole (SWX checksums network-order bytes
 * as they lie). SWX writes a sum of zero as 0xffff (UDP's rule); an IPv4
 * header's checksum is never 0xffff (its words are not all zero), so that
 * is RFC 791's 0. */
#define BNG_IPV4_CSUM_UPDATE(update, h) \
    if ((update) == CSUM_TTL_DECREMENTED) { \
        if (h.checksum < 0xfeff) { \
            h.checksum = h.checksum + 0x0100; \
        } else { \
            h.checksum = h.checksum - 0xfeff; \
        } \
    } else if ((update) == CSUM_RECOMPUTE) { \
        h.checksum = 0; \
        ck.clear(); \
        ck.add(h); \
        h.checksum = ck.get(); \
        if (h.checksum == 0xffff) { \
            h.checksum = 0; \
        } \
    }

#define SWX_METER_IN_GREEN PNA_MeterColor_t.RED
#define SWX_METER_IS_RED(c) ((c) == PNA_MeterColor_t.YELLOW)

parser MainParserImpl(packet_in pkt, out headers_t hdr, inout bng_meta_t meta,
                      in pna_main_parser_input_metadata_t istd) {
    BngParser() bng_parser;

    state start {
        pkt.extract(hdr.frame);
        meta.frame_len = (bit<32>) hdr.frame.length;
        /* p4c-dpdk gives the parser no input port; the switch marks the CPU
         * port as a host port (direction HOST_TO_NET) instead. */
        transition select(istd.direction) {
            PNA_Direction_t.HOST_TO_NET: parse_packet_out;
            default: parse_bng;
        }
    }

    /* A packet_out leaves untouched: nothing behind it is parsed. */
    state parse_packet_out {
        pkt.extract(hdr.packet_out);
        transition accept;
    }

    state parse_bng {
        bng_parser.apply(pkt, hdr, meta);
        transition accept;
    }
}

control PreControlImpl(in headers_t hdr, inout bng_meta_t meta,
                       in pna_pre_input_metadata_t istd, inout pna_pre_output_metadata_t ostd) {
    apply { }
}

control MainControlImpl(inout headers_t hdr, inout bng_meta_t meta,
                        in pna_main_input_metadata_t istd, inout pna_main_output_metadata_t ostd) {
    Counter<bit<64>, bit<32>>(BNG_MAX_SESSIONS, PNA_CounterType_t.PACKETS_AND_BYTES) session_up;
    Counter<bit<64>, bit<32>>(BNG_MAX_SESSIONS, PNA_CounterType_t.PACKETS_AND_BYTES) session_down;
    Counter<bit<64>, bit<32>>(32, PNA_CounterType_t.PACKETS_AND_BYTES) drops;
    Counter<bit<64>, bit<32>>(32, PNA_CounterType_t.PACKETS_AND_BYTES) punts;
    Meter<bit<32>>(BNG_MAX_SESSIONS, PNA_MeterType_t.BYTES) session_meter_up;
    Meter<bit<32>>(BNG_MAX_SESSIONS, PNA_MeterType_t.BYTES) session_meter_down;
    Meter<bit<32>>(32, PNA_MeterType_t.PACKETS) punt_meter;

    InternetChecksum() ck;
    BngIngress() bng;

    action send(port_t port) {
        send_to_port((PortId_t) port);
    }

    /* packet_out.egress_port -> port: p4c-dpdk's send_to_port() takes a
     * constant or an action parameter, not a header field. A miss is
     * counted before the drop (SWX drops at once, ending the program). */
    table packet_out_port {
        key = { hdr.packet_out.egress_port : exact @name("egress_port"); }
        actions = { send; @defaultonly NoAction; }
        const default_action = NoAction();
        size = 256;
    }

    apply {
        meta.in_port = (port_t) istd.input_port;
        /* Reset, not only set where a meter reads it: p4c-dpdk turns a field
         * written once with a constant into an immediate, and SWX's meter
         * takes its length from a field only. */
        meta.weight = 0;
        hdr.frame.setInvalid();
        if (hdr.packet_out.isValid()) {
            hdr.packet_out.setInvalid();
            if (!packet_out_port.apply().hit) {
                meta.w = (bit<32>) (bit<8>) DropReason_t.BAD_PACKET_OUT;
                drops.count(meta.w, meta.frame_len);
                drop_packet();
            }
        } else {
            /* IPv4 header checksums, for the core to judge. SWX checksums a
             * whole 20-byte header in one instruction (ckadd of a header);
             * its result is the complemented sum with 0 written as 0xffff,
             * so a correct header reads 0xffff, not 0. */
            meta.ipv4_csum_bad = 0;
            meta.inner_ipv4_csum_bad = 0;
            if (hdr.ipv4.isValid()) {
                ck.clear();
                ck.add(hdr.ipv4);
                if (ck.get() != 0xffff) {
                    meta.ipv4_csum_bad = 1;
                }
            }
            if (hdr.inner_ipv4.isValid()) {
                ck.clear();
                ck.add(hdr.inner_ipv4);
                if (ck.get() != 0xffff) {
                    meta.inner_ipv4_csum_bad = 1;
                }
            }

            bng.apply(hdr, meta);

            /* checksums of what the core rewrote */
            BNG_IPV4_CSUM_UPDATE(meta.ipv4_csum_update, hdr.ipv4)
            BNG_IPV4_CSUM_UPDATE(meta.inner_ipv4_csum_update, hdr.inner_ipv4)
            if (meta.mss_update == 1) {
                /* RFC 1624: HC' = ~(~HC + ~m + m') */
                ck.clear();
                ck.subtract({hdr.tcp.checksum, hdr.tcp_mss.mss});
                hdr.tcp_mss.mss = meta.mss_clamp;
                ck.add({hdr.tcp_mss.mss});
                hdr.tcp.checksum = ck.get();
                if (hdr.tcp.checksum == 0xffff) {
                    hdr.tcp.checksum = 0;       /* as above: the pseudo header is not all zero */
                }
            }
            PNA_MeterColor_t color = SWX_METER_IN_GREEN;
            if (meta.verdict == Verdict_t.FORWARD && meta.sess_idx != 0) {
                if (meta.direction == Direction_t.UPSTREAM) {
                    color = session_meter_up.dpdk_execute(meta.sess_idx, SWX_METER_IN_GREEN,
                                                          meta.sess_bytes);
                } else {
                    color = session_meter_down.dpdk_execute(meta.sess_idx, SWX_METER_IN_GREEN,
                                                            meta.sess_bytes);
                }
                if (SWX_METER_IS_RED(color)) {
                    meta.verdict = Verdict_t.DROP;
                    meta.drop_reason = DropReason_t.POLICER;
                } else if (meta.direction == Direction_t.UPSTREAM) {
                    session_up.count(meta.sess_idx, meta.sess_bytes);
                } else {
                    session_down.count(meta.sess_idx, meta.sess_bytes);
                }
            } else if (meta.verdict == Verdict_t.PUNT) {
                /* a packets meter: every packet weighs 1 */
                meta.weight = 1;
                meta.w = (bit<32>) (bit<8>) meta.punt_reason;
                color = punt_meter.dpdk_execute(meta.w, SWX_METER_IN_GREEN, meta.weight);
                if (SWX_METER_IS_RED(color)) {
                    meta.verdict = Verdict_t.DROP;
                    meta.drop_reason = DropReason_t.PUNT_POLICED;
                } else {
                    punts.count(meta.w, meta.frame_len);
                    if (meta.punt_reason == PuntReason_t.TTL_EXPIRED) {
                        meta.w = (bit<32>) (bit<8>) DropReason_t.TTL_EXPIRED;
                        drops.count(meta.w, meta.frame_len);
                    }
                }
            }

            /* FORWARD: the core's forwarding action has set the port. */
            if (meta.verdict == Verdict_t.PUNT) {
                hdr.packet_in.setValid();
                hdr.packet_in.ingress_port = meta.in_port;
                hdr.packet_in.line_id = meta.line_id;
                hdr.packet_in.session_id = meta.session_id;
                hdr.packet_in.reason = meta.punt_reason;
                hdr.packet_in._pad = 0;
                send_to_port((PortId_t) CPU_PORT);
            } else if (meta.verdict != Verdict_t.FORWARD) {
                meta.w = (bit<32>) (bit<8>) meta.drop_reason;
                drops.count(meta.w, meta.frame_len);
                drop_packet();
            }
        }
    }
}

control MainDeparserImpl(packet_out pkt, in headers_t hdr, in bng_meta_t meta,
                         in pna_main_output_metadata_t ostd) {
    apply {
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

PNA_NIC(MainParserImpl(), PreControlImpl(), MainControlImpl(), MainDeparserImpl()) main;
