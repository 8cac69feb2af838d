/*
 * switch_test: a small PNA program for testing the DPDK SWX switch and its
 * P4Runtime server, independent of the BNG program. It has one table of each
 * match kind the server handles (exact, LPM, ternary), an indirect counter, a
 * meter, a register, a direct counter and a direct meter, and the
 * packet_in/packet_out controller headers.
 *
 * Byte counts and meters use "Ethernet header + IPv4 total length" (14 for
 * non-IPv4 frames): the DPDK PNA target gives the program no packet length.
 *
 * Port 0 is the CPU port (packet-in/out); data ports start at 1. The switch
 * marks the CPU port as a host port (PNA direction HOST_TO_NET).
 */
#include <core.p4>
#include <dpdk/pna.p4>

typedef bit<32> port_t;

const port_t CPU_PORT = 0;
const bit<16> ETHERTYPE_IPV4 = 0x0800;

/* p4c-dpdk hands PNA_MeterColor_t values (RED=0, GREEN=1, YELLOW=2) straight
 * to DPDK's meter, whose colours are rte_color (GREEN=0, YELLOW=1, RED=2).
 * So this program spells DPDK's values: "RED" (0) as the input colour is
 * DPDK's GREEN (colour-blind), and a result of "YELLOW" (2) is DPDK's RED. */
#define SWX_METER_IN_GREEN PNA_MeterColor_t.RED
#define SWX_METER_IS_RED(c) ((c) == PNA_MeterColor_t.YELLOW)


@controller_header("packet_in")
header packet_in_h {
    port_t ingress_port;
    bit<8> reason;
    bit<8> _pad0;
    bit<16> _pad1;
}

@controller_header("packet_out")
header packet_out_h {
    port_t egress_port;
}

header ethernet_h {
    bit<48> dst_addr;
    bit<48> src_addr;
    bit<16> ether_type;
}

header ipv4_h {
    bit<8> version_ihl;
    bit<8> dscp_ecn;
    bit<16> total_len;
    bit<16> identification;
    bit<16> flags_frag;
    bit<8> ttl;
    bit<8> protocol;
    bit<16> checksum;
    bit<32> src_addr;
    bit<32> dst_addr;
}

struct headers_t {
    packet_in_h packet_in;
    packet_out_h packet_out;
    ethernet_h ethernet;
    ipv4_h ipv4;
}

struct metadata_t {
    port_t in_port;
    bit<32> meter_index;
    bit<32> byte_len;   /* Ethernet header + IPv4 total length (see above) */
    bit<16> ether_type;
    bit<8> punt;
    bit<8> forwarded;
    bit<8> punt_reason;
    bit<8> host_dropped;
}

parser MainParserImpl(packet_in pkt, out headers_t hdr, inout metadata_t meta,
                      in pna_main_parser_input_metadata_t istd) {
    state start {
        /* The CPU port is a host port (direction HOST_TO_NET, set by the
         * switch per port): its frames carry packet_out. p4c-dpdk leaves the
         * parser's istd.input_port unset, so the port itself is read in the
         * main control. */
        transition select(istd.direction) {
            PNA_Direction_t.HOST_TO_NET: parse_packet_out;
            default: parse_ethernet;
        }
    }
    state parse_packet_out {
        pkt.extract(hdr.packet_out);
        transition parse_ethernet;
    }
    state parse_ethernet {
        pkt.extract(hdr.ethernet);
        meta.ether_type = hdr.ethernet.ether_type;
        transition select(hdr.ethernet.ether_type) {
            ETHERTYPE_IPV4: parse_ipv4;
            default: accept;
        }
    }
    state parse_ipv4 {
        pkt.extract(hdr.ipv4);
        transition accept;
    }
}

control PreControlImpl(in headers_t hdr, inout metadata_t meta,
                       in pna_pre_input_metadata_t istd, inout pna_pre_output_metadata_t ostd) {
    apply { }
}

control MainControlImpl(inout headers_t hdr, inout metadata_t meta,
                        in pna_main_input_metadata_t istd, inout pna_main_output_metadata_t ostd) {
    Counter<bit<32>, bit<32>>(64, PNA_CounterType_t.PACKETS_AND_BYTES) port_rx;
    Meter<bit<32>>(64, PNA_MeterType_t.BYTES) port_meter;
    Register<bit<32>, bit<32>>(16) scratch;
    DirectCounter<bit<64>>(PNA_CounterType_t.PACKETS_AND_BYTES) host_traffic;
    DirectMeter(PNA_MeterType_t.BYTES) host_policer;

    action drop() {
        drop_packet();
    }
    action forward(port_t port) {
        send_to_port((PortId_t) port);
        meta.forwarded = 1;
    }
    action punt(bit<8> reason) {
        meta.punt = 1;
        meta.punt_reason = reason;
    }
    action set_meter(bit<32> index) {
        meta.meter_index = index;
    }

    /* Counted by host_policy's direct counter, then policed by its direct
     * meter: both are indexed by the entry that matched. */
    action police_host() {
        host_traffic.count(meta.byte_len);
        PNA_MeterColor_t color = host_policer.dpdk_execute(SWX_METER_IN_GREEN, meta.byte_len);
        if (SWX_METER_IS_RED(color)) {
            meta.host_dropped = 1;
        }
    }

    /* Data port -> data port ("wire"), the simplest forwarding. A miss
     * must not drop here: p4c-dpdk's drop_packet() ends the packet at once,
     * so the drop decision is taken last. */
    table port_fwd {
        key = { meta.in_port : exact @name("in_port"); }
        actions = { forward; NoAction; }
        const default_action = NoAction();
        size = 256;
    }

    /* Destination MAC -> port; overrides port_fwd. */
    table l2_fwd {
        key = { hdr.ethernet.dst_addr : exact @name("dst_addr"); }
        actions = { forward; NoAction; }
        default_action = NoAction();
        size = 131072;
    }

    table ipv4_route {
        key = { hdr.ipv4.dst_addr : lpm @name("dst_addr"); }
        actions = { forward; NoAction; }
        default_action = NoAction();
        size = 1024;
    }

    table punt_acl {
        key = { meta.ether_type : ternary @name("ether_type"); }
        actions = { punt; NoAction; }
        default_action = NoAction();
        size = 256;
    }

    /* Port -> meter index: a meter per port, set by the controller. */
    table port_meter_map {
        key = { meta.in_port : exact @name("in_port"); }
        actions = { set_meter; NoAction; }
        default_action = NoAction();
        size = 256;
    }

    /* Source MAC -> per-host accounting and policing. */
    table host_policy {
        key = { hdr.ethernet.src_addr : exact @name("src_addr"); }
        actions = { police_host; @defaultonly NoAction; }
        const default_action = NoAction();
        size = 1024;
        pna_direct_counter = host_traffic;
        pna_direct_meter = host_policer;
    }

    /* packet_out.egress_port -> port: p4c-dpdk's send_to_port() takes a
     * constant or an action parameter, not a header field. */
    table packet_out_port {
        key = { hdr.packet_out.egress_port : exact @name("egress_port"); }
        actions = { forward; drop; }
        const default_action = drop();
        size = 256;
    }

    apply {
        meta.in_port = (port_t) istd.input_port;
        meta.punt = 0;
        meta.forwarded = 0;
        meta.meter_index = 0;
        meta.host_dropped = 0;
        if (hdr.packet_out.isValid()) {
            packet_out_port.apply();
            hdr.packet_out.setInvalid();
        } else {
            meta.byte_len = 14;
            if (hdr.ipv4.isValid()) {
                meta.byte_len = 14 + (bit<32>) hdr.ipv4.total_len;
            }
            port_rx.count(meta.in_port, meta.byte_len);
            scratch.write(0, meta.in_port);
            port_fwd.apply();
            l2_fwd.apply();
            if (hdr.ipv4.isValid()) {
                ipv4_route.apply();
            }
            punt_acl.apply();
            port_meter_map.apply();
            if (meta.meter_index != 0) {
                PNA_MeterColor_t color = port_meter.dpdk_execute(meta.meter_index, SWX_METER_IN_GREEN,
                                                                 meta.byte_len);
                if (SWX_METER_IS_RED(color)) {
                    drop_packet();
                }
            }
            host_policy.apply();
            if (meta.host_dropped == 1) {
                drop_packet();
            }
            if (meta.punt == 1) {
                hdr.packet_in.setValid();
                hdr.packet_in.ingress_port = meta.in_port;
                hdr.packet_in.reason = meta.punt_reason;
                hdr.packet_in._pad0 = 0;
                hdr.packet_in._pad1 = 0;
                send_to_port((PortId_t) CPU_PORT);
            } else if (meta.forwarded == 0) {
                drop_packet();
            }
        }
    }
}

control MainDeparserImpl(packet_out pkt, in headers_t hdr, in metadata_t meta,
                         in pna_main_output_metadata_t ostd) {
    apply {
        pkt.emit(hdr.packet_in);
        pkt.emit(hdr.ethernet);
        pkt.emit(hdr.ipv4);
    }
}

PNA_NIC(MainParserImpl(), PreControlImpl(), MainControlImpl(), MainDeparserImpl()) main;
