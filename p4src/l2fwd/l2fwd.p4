/*
 * l2fwd: the P4 L2 forwarding baseline of bench-bng. It parses Ethernet,
 * looks the destination MAC up in one exact table and sends the frame to the
 * port the entry names, unchanged.
 *
 * It is the same kind of baseline as the "L2 forwarding" program that the
 * public P4-DPDK BNG measurements compare against (P4-Research's
 * nikss-artifacts, 05_p4_targets: Ethernet, one exact dst-MAC table): a P4
 * program compiled by p4c-dpdk and run by the same switch, so the ratio
 * bng/l2fwd says what the BNG's own work costs, apart from the cost of any
 * P4 program on SWX. bench-bng also measures DPDK's hand-written l2fwd.spec
 * (no parser, no lookup), the stricter baseline.
 *
 * The controller headers are declared (unused) so that the switch's
 * P4Runtime server accepts the program like any other.
 */
#include <core.p4>
#include <dpdk/pna.p4>

typedef bit<32> port_t;

@controller_header("packet_in")
header packet_in_h {
    port_t ingress_port;
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

struct headers_t {
    packet_in_h packet_in;
    packet_out_h packet_out;
    ethernet_h ethernet;
}

struct metadata_t {
}

parser MainParserImpl(packet_in pkt, out headers_t hdr, inout metadata_t meta,
                      in pna_main_parser_input_metadata_t istd) {
    state start {
        pkt.extract(hdr.ethernet);
        transition accept;
    }
}

control PreControlImpl(in headers_t hdr, inout metadata_t meta,
                       in pna_pre_input_metadata_t istd, inout pna_pre_output_metadata_t ostd) {
    apply { }
}

control MainControlImpl(inout headers_t hdr, inout metadata_t meta,
                        in pna_main_input_metadata_t istd, inout pna_main_output_metadata_t ostd) {
    action forward(port_t port) {
        send_to_port((PortId_t) port);
    }
    action drop() {
        drop_packet();
    }

    table l2_fwd {
        key = { hdr.ethernet.dst_addr : exact @name("dst_addr"); }
        actions = { forward; @defaultonly drop; }
        const default_action = drop();
        size = 131072;
    }

    apply {
        l2_fwd.apply();
    }
}

control MainDeparserImpl(packet_out pkt, in headers_t hdr, in metadata_t meta,
                         in pna_main_output_metadata_t ostd) {
    apply {
        pkt.emit(hdr.ethernet);
    }
}

PNA_NIC(MainParserImpl(), PreControlImpl(), MainControlImpl(), MainDeparserImpl()) main;
