/*
 * The BNG for Tofino (TNA; T2NA where p4c-barefoot targets tofino2, which
 * p4src/programs.yaml does). Only this file differs from the DPDK build: it
 * maps Tofino's intrinsic metadata to the core, holds the counters and
 * meters in their TNA flavour (lengths come from the hardware), and fills
 * the core's hooks (defines.p4) with what Tofino's parser, gateways and
 * deparser can do.
 *
 * Tofino gives ingress no frame length, so meta.frame_len is 0xffff and
 * the core's length-against-frame checks are left out (BNG_PAST_FRAME); a
 * header running past the frame's end sets the parser's error flag, which
 * the top drops as MALFORMED.
 *
 * Tofino 2 places it in its 20 MAU stages with 32k sessions per pipe (see
 * p4src/build/bng_tofino2/resources.txt). Tofino 1 has 12: the longest
 * chain of dependent tables and conditions needs 16, so it does not fit;
 * moving the meters and counters to egress does not shorten it (see
 * README.md, "Limits of the Tofino build").
 */
#include <core.p4>
#if __TARGET_TOFINO__ == 2
#include <t2na.p4>
#else
#include <tna.p4>
#endif

/* Tofino's checksum units: IPv4 header checksums are verified as the
 * headers are parsed (verify() is true when the sum is right); for MSS
 * clamping the parser deposits the TCP checksum's sum without the checksum
 * and MSS words, and the deparser adds the new MSS back (RFC 1624). */
#define BNG_PARSER_CHECKSUMS \
    Checksum() ipv4_checksum; \
    Checksum() inner_ipv4_checksum; \
    Checksum() tcp_checksum;
/* The parser cannot negate verify(): the *_csum_bad fields hold "sum is
 * right" here, hence the two conditions below. */
#define BNG_PARSED_IPV4 \
    ipv4_checksum.add(hdr.ipv4); \
    meta.ipv4_csum_bad[0:0] = (bit<1>) ipv4_checksum.verify();
#define BNG_PARSED_INNER_IPV4 \
    inner_ipv4_checksum.add(hdr.inner_ipv4); \
    meta.inner_ipv4_csum_bad[0:0] = (bit<1>) inner_ipv4_checksum.verify();
#define BNG_IPV4_CSUM_BAD (meta.ipv4_csum_bad == 0)
#define BNG_INNER_IPV4_CSUM_BAD (meta.inner_ipv4_csum_bad == 0)
#define BNG_PARSED_TCP \
    tcp_checksum.subtract({hdr.tcp.checksum});
#define BNG_PARSED_TCP_MSS \
    tcp_checksum.subtract({hdr.tcp_mss.mss}); \
    tcp_checksum.subtract_all_and_deposit(meta.tcp_csum_residual);
/* No additions in Tofino's parser (see defines.p4): l2tp_len comes from
 * the l2tp_header_len table below; the VLAN id is a slice, not a mask. */
#define BNG_PARSER_ADD(field, n)
#define BNG_PARSER_VID(field, tci) field = (bit<16>) tci[11:0];
#define BNG_PAST_FRAME(len) false
#define BNG_L2TP_LENGTH_BAD false
/* Gateways compare a field only with a constant: BngIngressTop clamps
 * with saturating arithmetic instead. */
#define BNG_MSS_ABOVE_CLAMP true
/* Gateways compare a field only with a constant, and an ALU takes action
 * data only as its first operand: the downstream session's action keeps
 * max_len less each IP length (the action serves both versions), and a
 * packet is over it where that went negative. Without another stage for
 * a saturating subtraction the chip has no room for, a length field more
 * than 32767 above max_len wraps to "fits": only a malformed packet has
 * one (Tofino cannot check IP lengths against the frame either). */
#define BNG_SET_MAX_LEN(len) \
    meta.v4_len_room = (len) - hdr.ipv4.total_len; \
    meta.v6_len_room = (len) - hdr.ipv6.payload_len;
#define BNG_IPV4_OVER_MAX_LEN (meta.v4_len_room[15:15] == 1)
#define BNG_IPV6_OVER_MAX_LEN (meta.v6_len_room[15:15] == 1)
#define BNG_IPV4_LEN_BELOW_HEADER(len) (((len) & 0xfff0) == 0 || ((len) & 0xfffc) == 16)

/* Per pipe. A meter array sits in one MAU stage, and 32k two-rate meters
 * take 42 of a Tofino 2 stage's 48 map RAMs: 64k would need each session
 * meter split in two by the index's top bit (p4c-barefoot 9.13.4). */
#define BNG_MAX_SESSIONS 32768

/* Tables of independent keys share a stage: the BNG's addresses are looked
 * up before the branches (see defines.p4). */
#define BNG_LOCAL_IPV4_FIRST

#include "../include/bng.p4"

/* The core's metadata plus what only Tofino needs: its deparser takes a
 * checksum-update condition only as a 1-bit field, the core's flags are
 * whole bytes (SWX metadata). */
struct tna_meta_t {
    bng_meta_t bng;
    bit<1> ipv4_csum_update;
    bit<1> inner_ipv4_csum_update;
    bit<1> mss_update;
    bit<16> mss_excess;
}

/* The CPU PCIe port: Tofino 2 numbers it 0, Tofino 1 192 (pipe 0 of a
 * 2-pipe chip; 320 on a 4-pipe one). */
#if __TARGET_TOFINO__ == 2
const PortId_t TOFINO_CPU_PORT = 0;
#else
const PortId_t TOFINO_CPU_PORT = 192;
#endif

parser BngIngressParser(packet_in pkt, out headers_t hdr, out tna_meta_t md,
                        out ingress_intrinsic_metadata_t ig_intr_md) {
    BngParser() bng_parser;

    state start {
        pkt.extract(ig_intr_md);
        pkt.advance(PORT_METADATA_SIZE);
        md.bng.frame_len = 0xffff;
        md.bng.ipv4_csum_bad = 0;
        md.bng.inner_ipv4_csum_bad = 0;
        md.bng.tcp_csum_residual = 0;
        md.bng.in_port = (port_t) ig_intr_md.ingress_port;
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
        bng_parser.apply(pkt, hdr, md.bng);
        transition accept;
    }
}

control BngIngressTop(inout headers_t hdr, inout tna_meta_t md,
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

    action set_l2tp_len(bit<16> len) {
        md.bng.l2tp_len = len;
    }

    /* L2TP data header bytes by its optional fields (Length, Ns/Nr,
     * Offset Size): the sum the PNA parser keeps, in one lookup rather
     * than three dependent additions. */
    table l2tp_header_len {
        key = {
            hdr.l2tp_length.isValid() : exact @name("has_length");
            hdr.l2tp_seq.isValid()    : exact @name("has_seq");
            hdr.l2tp_offset.isValid() : exact @name("has_offset");
        }
        actions = { set_l2tp_len; }
        const entries = {
            (false, false, false) : set_l2tp_len(6);
            (true,  false, false) : set_l2tp_len(8);
            (false, true,  false) : set_l2tp_len(10);
            (true,  true,  false) : set_l2tp_len(12);
            (false, false, true)  : set_l2tp_len(8);
            (true,  false, true)  : set_l2tp_len(10);
            (false, true,  true)  : set_l2tp_len(12);
            (true,  true,  true)  : set_l2tp_len(14);
        }
        const default_action = set_l2tp_len(6);
        size = 8;
    }

    apply {
        if (hdr.packet_out.isValid()) {
            ig_tm_md.ucast_egress_port = (PortId_t) hdr.packet_out.egress_port[8:0];
            hdr.packet_out.setInvalid();
            ig_tm_md.bypass_egress = 1;
        } else {
            l2tp_header_len.apply();
            bng.apply(hdr, md.bng);
            if (ig_prsr_md.parser_err != PARSER_ERROR_OK) {
                /* a header ran past the frame's end (the PNA build's
                 * parsed_len check) */
                md.bng.verdict = Verdict_t.DROP;
                md.bng.drop_reason = DropReason_t.MALFORMED;
            }
            md.ipv4_csum_update = 0;
            md.inner_ipv4_csum_update = 0;
            md.mss_update = 0;
            /* CSUM_RECOMPUTE or CSUM_TTL_DECREMENTED: the deparser
             * recomputes either way */
            if (md.bng.ipv4_csum_update != 0) {
                md.ipv4_csum_update = 1;
            }
            if (md.bng.inner_ipv4_csum_update != 0) {
                md.inner_ipv4_csum_update = 1;
            }
            if (md.bng.mss_update == 1) {
                /* BNG_MSS_ABOVE_CLAMP is true here: the MSS becomes
                 * min(mss, clamp) without a comparison (a gateway cannot
                 * compare two fields), as mss - (mss - clamp saturated at 0).
                 * An unchanged MSS gets its checksum recomputed unchanged. */
                md.mss_excess = hdr.tcp_mss.mss |-| md.bng.mss_clamp;
                md.mss_update = 1;                     /* TCP checksum: deparser */
            }
            if (md.mss_update == 1) {
                hdr.tcp_mss.mss = hdr.tcp_mss.mss - md.mss_excess;
            }
            bit<8> color = 0;
            if (md.bng.verdict == Verdict_t.FORWARD && md.bng.sess_idx != 0) {
                if (md.bng.direction == Direction_t.UPSTREAM) {
                    color = session_meter_up.execute(md.bng.sess_idx);
                } else {
                    color = session_meter_down.execute(md.bng.sess_idx);
                }
                if (color == MeterColor_t.RED) {
                    md.bng.verdict = Verdict_t.DROP;
                    md.bng.drop_reason = DropReason_t.POLICER;
                } else if (md.bng.direction == Direction_t.UPSTREAM) {
                    session_up.count(md.bng.sess_idx);
                } else {
                    session_down.count(md.bng.sess_idx);
                }
            } else if (md.bng.verdict == Verdict_t.PUNT) {
                color = punt_meter.execute((bit<8>) md.bng.punt_reason);
                if (color == MeterColor_t.RED) {
                    md.bng.verdict = Verdict_t.DROP;
                    md.bng.drop_reason = DropReason_t.PUNT_POLICED;
                } else {
                    punts.count((bit<8>) md.bng.punt_reason);
                }
            }

            if (md.bng.verdict == Verdict_t.FORWARD) {
                ig_tm_md.ucast_egress_port = (PortId_t) md.bng.out_port[8:0];
            } else if (md.bng.verdict == Verdict_t.PUNT) {
                hdr.packet_in.setValid();
                hdr.packet_in.ingress_port = (port_t) ig_intr_md.ingress_port;
                hdr.packet_in.line_id = md.bng.line_id;
                hdr.packet_in.session_id = md.bng.session_id;
                hdr.packet_in.reason = md.bng.punt_reason;
                hdr.packet_in._pad = 0;
                ig_tm_md.ucast_egress_port = TOFINO_CPU_PORT;
            } else {
                drops.count((bit<8>) md.bng.drop_reason);
                ig_dprsr_md.drop_ctl = 1;
            }
            ig_tm_md.bypass_egress = 1;
        }
    }
}

control BngIngressDeparser(packet_out pkt, inout headers_t hdr, in tna_meta_t md,
                           in ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md) {
    Checksum() ipv4_csum;
    Checksum() inner_ipv4_csum;
    Checksum() tcp_csum;

    apply {
        if (md.ipv4_csum_update == 1) {
            hdr.ipv4.checksum = ipv4_csum.update({IPV4_CHECKSUM_FIELDS(hdr.ipv4)});
        }
        if (md.inner_ipv4_csum_update == 1) {
            hdr.inner_ipv4.checksum = inner_ipv4_csum.update({IPV4_CHECKSUM_FIELDS(hdr.inner_ipv4)});
        }
        if (md.mss_update == 1) {
            hdr.tcp.checksum = tcp_csum.update({hdr.tcp_mss.mss, md.bng.tcp_csum_residual});
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
