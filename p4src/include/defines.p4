/*
 * Types and constants of the BNG data plane, shared by every architecture.
 *
 * The enums below are the contract with the controller: PuntReason_t types
 * the packet_in header (so it reaches the P4Info), and scripts/p4build.py
 * exports every `enum bit<N>` of this file to <program>.enums.json, which is
 * how the controller learns drop-counter indices without repeating them.
 */
#ifndef BNG_DEFINES_P4
#define BNG_DEFINES_P4

typedef bit<32> port_t;      /* switch port number; the CPU port is 0 */
typedef bit<32> line_id_t;   /* subscriber line (port, s-tag, c-tag); 0 = unknown */
typedef bit<32> sess_idx_t;  /* index of a session's counters and meters; 0 = none */
typedef bit<32> nexthop_id_t;
typedef bit<32> tunnel_idx_t;

const port_t CPU_PORT = 0;

/* How a forwarding action sets its output port. By default the core leaves
 * it in meta.out_port for the top; a top may define this before including
 * the core to set its architecture's output port in the action itself (the
 * PNA top does: p4c-dpdk's send_to_port() takes an action parameter, so no
 * table lookup is needed to turn a metadata field into a port). */
#ifndef BNG_SET_OUTPUT_PORT
#define BNG_SET_OUTPUT_PORT(port) meta.out_port = (port)
#endif

/* Parser hooks for architectures whose checksum units live in the parser
 * (Tofino): declarations inside BngParser, and statements run right after
 * the outer IPv4, inner IPv4, TCP and TCP MSS headers are extracted. Empty by
 * default: the PNA top checksums in its control instead. */
#ifndef BNG_PARSER_CHECKSUMS
#define BNG_PARSER_CHECKSUMS
#endif
#ifndef BNG_PARSED_IPV4
#define BNG_PARSED_IPV4
#endif
#ifndef BNG_PARSED_INNER_IPV4
#define BNG_PARSED_INNER_IPV4
#endif
#ifndef BNG_PARSED_TCP
#define BNG_PARSED_TCP
#endif
#ifndef BNG_PARSED_TCP_MSS
#define BNG_PARSED_TCP_MSS
#endif

/* The parser's length accounting (meta.parsed_len, l2_len, l2tp_len), one
 * statement per extracted header. SWX extracts without bounds checks, so the
 * PNA build needs these sums to drop truncated frames. Tofino's parser can
 * only deposit constants and packet bytes, not add: the TNA top defines this
 * empty, drops on the parser's own error flag instead, and derives l2tp_len
 * from which L2TP fields are valid. */
#ifndef BNG_PARSER_ADD
#define BNG_PARSER_ADD(field, n) field = field + (n);
#endif

/* An L2TP data message whose Length field (L bit) is not the whole message,
 * which RFC 2661 3.1 says it is: the UDP payload. Where it is tested,
 * meta.ppp_len holds the UDP length + 20 (to be compared with IPv4's total
 * length). Tofino checks no length against the frame (BNG_PAST_FRAME) and
 * its 20 stages have no room for this test on the LNS upstream chain (21
 * with it): the TNA top defines it false. */
#ifndef BNG_L2TP_LENGTH_BAD
#define BNG_L2TP_LENGTH_BAD (hdr.l2tp_length.isValid() && hdr.l2tp_length.length + 28 != meta.ppp_len)
#endif

/* Where the BNG's own IPv4 addresses are looked up (local_ipv4). Tofino
 * looks up tables of independent keys side by side in one stage, and its
 * 20 stages have no room for a longer chain: the TNA top defines
 * BNG_LOCAL_IPV4_FIRST, and local_ipv4 comes before the branches, its
 * result gating the L2TP session lookups. A CPU pays for every lookup in
 * turn: the DPDK build looks up the sessions first (an L2TP session's entry
 * holds one of the BNG's addresses, a subscriber's address is none of them)
 * and local_ipv4 only for ARP and for core-side IPv4 no session claims, one
 * lookup fewer for PPPoE and LNS downstream and for LNS upstream. That
 * order on Tofino 2 needed 24 stages. Tested with #ifdef only: the PNA top
 * leaves it undefined. */

/* True when `len` bytes run past the end of the received frame. */
#ifndef BNG_PAST_FRAME
#define BNG_PAST_FRAME(len) ((len) > meta.frame_len)
#endif

/* Whether an IPv4 total length is shorter than the option-less header.
 * Tofino's gateways range-compare at most 12 bits of a field: the TNA top
 * spells it as masks (below 16, or 16 to 19). */
#ifndef BNG_IPV4_LEN_BELOW_HEADER
#define BNG_IPV4_LEN_BELOW_HEADER(len) ((len) < 20)
#endif

/* Whether the outer / inner IPv4 header checksum is wrong, as the top found
 * it (meta.*ipv4_csum_bad). Tofino's parser cannot negate verify(): the TNA
 * top keeps "sum is right" in those fields and redefines these. */
#ifndef BNG_IPV4_CSUM_BAD
#define BNG_IPV4_CSUM_BAD (meta.ipv4_csum_bad == 1)
#endif
#ifndef BNG_INNER_IPV4_CSUM_BAD
#define BNG_INNER_IPV4_CSUM_BAD (meta.inner_ipv4_csum_bad == 1)
#endif

/* Whether a SYN's MSS option exceeds the session's clamp. Tofino's gateways
 * compare a field only with a constant: the TNA top defines this true and
 * compares after the core, by subtraction. */
#ifndef BNG_MSS_ABOVE_CLAMP
#define BNG_MSS_ABOVE_CLAMP (hdr.tcp_mss.mss > meta.mss_clamp)
#endif

/* A downstream session's length limit (to_pppoe, to_l2tp: max_len, the
 * largest IPv4 total length or IPv6 payload length its MRU takes) and
 * whether a packet is over it. Tofino's gateways compare a field only with
 * a constant: the TNA top has the action subtract the packet's
 * lengths from it and tests the sign. */
#ifndef BNG_SET_MAX_LEN
#define BNG_SET_MAX_LEN(len) meta.max_len = (len);
#endif
#ifndef BNG_IPV4_OVER_MAX_LEN
#define BNG_IPV4_OVER_MAX_LEN (hdr.ipv4.total_len > meta.max_len)
#endif
#ifndef BNG_IPV6_OVER_MAX_LEN
#define BNG_IPV6_OVER_MAX_LEN (hdr.ipv6.payload_len > meta.max_len)
#endif

/* A VLAN tag's id into a lookup key: the TCI without PCP and DEI. */
#ifndef BNG_PARSER_VID
#define BNG_PARSER_VID(field, tci) field = (tci) & 0x0fff;
#endif

/* Table and extern sizes: 64k sessions (PPPoE and L2TP together). */
#ifndef BNG_MAX_SESSIONS
#define BNG_MAX_SESSIONS 65536
#endif
#ifndef BNG_MAX_LINES
#define BNG_MAX_LINES 65536
#endif
#define BNG_MAX_TUNNELS 4096
#define BNG_MAX_NEXTHOPS 1024
#define BNG_FIB_SIZE 1024
/* meta.nexthop_id of a route or tunnel whose entry carries its next hop's
 * L2 rewrite (set_nexthop_l2, set_tunnel_l2): no next hop id is this large. */
const nexthop_id_t NEXTHOP_INLINE = 0xFFFFFFFF;

const bit<16> ETHERTYPE_IPV4 = 0x0800;
const bit<16> ETHERTYPE_ARP = 0x0806;
const bit<16> ETHERTYPE_VLAN = 0x8100;
const bit<16> ETHERTYPE_QINQ = 0x88a8;
const bit<16> ETHERTYPE_IPV6 = 0x86dd;
const bit<16> ETHERTYPE_PPPOE_DISCOVERY = 0x8863;
const bit<16> ETHERTYPE_PPPOE_SESSION = 0x8864;

const bit<16> PPP_IPV4 = 0x0021;
const bit<16> PPP_IPV6 = 0x0057;
const bit<16> PPP_ADDRESS_CONTROL = 0xff03;

const bit<8> IP_PROTO_TCP = 6;
const bit<8> IP_PROTO_UDP = 17;
const bit<16> L2TP_PORT = 1701;

/* L2TPv2 header (RFC 2661 section 3.1): flags byte, version byte. */
const bit<8> L2TP_FLAG_T = 0x80;
const bit<8> L2TP_FLAG_L = 0x40;
const bit<8> L2TP_FLAG_S = 0x08;
const bit<8> L2TP_FLAG_O = 0x02;
const bit<8> L2TP_VERSION_MASK = 0x0f;
const bit<8> L2TP_VERSION = 2;

/* meta.l2tp_class: what the parser made of an L2TP header. */
const bit<8> L2TP_DATA = 0;
const bit<8> L2TP_CONTROL = 1;       /* T bit: punted whole */
const bit<8> L2TP_MALFORMED = 2;      /* a version other than 2, or a data message with id 0 */
const bit<8> L2TP_OFFSET = 3;        /* non-zero offset padding: unsupported */

/* meta.ipv6_class: what the parser made of the last IPv6 header's first
 * word and destination. */
const bit<8> IPV6_UNICAST = 0;
const bit<8> IPV6_LINK_LOCAL = 1;    /* fe80::/10 destination */
const bit<8> IPV6_MULTICAST = 2;     /* ff00::/8 destination */
const bit<8> IPV6_BAD_VERSION = 3;

const bit<8> TCP_FLAG_SYN = 0x02;
const bit<8> TCP_OPTION_MSS = 2;

/* Why a packet goes to the controller (packet_in.reason). */
enum bit<8> PuntReason_t {
    NONE = 0,
    PPPOE_DISCOVERY = 1,   /* PADI, PADR, PADT, ... */
    PPP_CONTROL = 2,       /* LCP, PAP, CHAP, IPCP, IPv6CP, ... in a PPPoE session */
    L2TP_CONTROL = 3,      /* L2TP control message (T bit) to one of our addresses */
    L2TP_PPP_CONTROL = 4,  /* PPP control protocol inside an L2TP data session */
    ARP = 5,               /* ARP for one of the BNG's addresses */
    LOCAL_IPV4 = 6,        /* IPv4 to one of the BNG's addresses (ICMP echo, ...) */
    LOCAL_IPV6 = 7,        /* IPv6 to one of the BNG's addresses (ND, ICMPv6 echo) */
    SUBSCRIBER_IPV6_CONTROL = 8, /* link-local IPv6 from a subscriber: RS, DHCPv6, NS */
    TTL_EXPIRED = 9,       /* the controller answers with ICMP time exceeded */
    PACKET_TOO_BIG = 10    /* downstream IP larger than the session's MRU: the
                            * controller fragments it (IPv4 without DF) or
                            * answers with ICMP fragmentation needed / ICMPv6
                            * packet too big (RFC 1191, RFC 8201) */
}

/* Index of the `drops` counter: why a packet was not forwarded. */
enum bit<8> DropReason_t {
    NONE = 0,
    MALFORMED = 1,         /* truncated, bad lengths, bad versions, session id 0, IPv4 options */
    BAD_CHECKSUM = 2,      /* IPv4 header checksum */
    UNKNOWN_LINE = 3,      /* PPPoE session traffic on a line without a line_map entry */
    NO_SESSION = 4,        /* PPPoE / L2TP data for no installed session */
    SPOOFED = 5,           /* source MAC/IP does not belong to the session */
    TTL_EXPIRED = 6,
    POLICER = 7,           /* session meter red */
    PUNT_POLICED = 8,      /* punt meter red */
    NO_ROUTE = 9,
    NOT_FOR_US = 10,       /* destination MAC or ARP target not the BNG's */
    BAD_PACKET_OUT = 11,   /* packet_out to an unknown port */
    UNSUPPORTED = 12       /* L2TP offset padding, unknown ethertype on an access port */
}

/* What the architecture-neutral core decided; the top carries it out. */
enum bit<8> Verdict_t {
    DROP = 0,
    FORWARD = 1,
    PUNT = 2
}

enum bit<8> Direction_t {
    NONE = 0,
    UPSTREAM = 1,          /* from the subscriber */
    DOWNSTREAM = 2         /* toward the subscriber */
}

#endif
