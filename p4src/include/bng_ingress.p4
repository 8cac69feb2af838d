/*
 * The BNG's forwarding logic, architecture-neutral: tables and header
 * rewrites only. It reads meta.in_port and meta.frame_len from the top and
 * leaves a verdict (forward to the port BNG_SET_OUTPUT_PORT set, punt with a reason, or drop
 * with a reason) plus the session to count and police; the top owns the
 * counters, meters and the port it sends to.
 *
 * The work is done in two phases. Classification looks up the line, the
 * session and the destination, checks the packet, and either decides (drop,
 * punt) or picks a job. The job phase then rewrites the headers once, so
 * PPPoE and L2TP upstream share one routing path.
 */
#ifndef BNG_INGRESS_P4
#define BNG_INGRESS_P4

#include "headers.p4"

/* Arithmetic follows the rules in bng_meta_t's comment: lengths start
 * from what the parser seeded and change in place, and conditions compare
 * whole fields. Checksums are the tops' job (meta.*_csum_* flags): PNA has
 * an extern for them in the control, Tofino only in the parser and
 * deparser. */
/* meta.ipv4_csum_update / inner_ipv4_csum_update: what became of the
 * header since its checksum was right. A top may recompute in both cases;
 * the PNA top updates a decremented TTL's checksum incrementally (RFC 1624),
 * which reads only the checksum field. */
const bit<8> CSUM_RECOMPUTE = 1;       /* a header written afresh (L2TP encap) */
const bit<8> CSUM_TTL_DECREMENTED = 2; /* only the TTL changed, one lower */

const bit<8> JOB_NONE = 0;
const bit<8> JOB_ROUTE_UP_V4 = 1;    /* subscriber IPv4 (inner_ipv4) to the FIB */
const bit<8> JOB_ROUTE_UP_V6 = 2;
const bit<8> JOB_LAC_UP = 3;         /* PPPoE session -> L2TP toward the LNS */
const bit<8> JOB_LAC_DOWN = 4;       /* L2TP from the LNS -> PPPoE */
const bit<8> JOB_PPPOE_DOWN_V4 = 5;  /* core IPv4 -> PPPoE subscriber */
const bit<8> JOB_PPPOE_DOWN_V6 = 6;
const bit<8> JOB_LNS_DOWN_V4 = 7;    /* core IPv4 -> L2TP toward the LAC */
const bit<8> JOB_LNS_DOWN_V6 = 8;
const bit<8> JOB_ROUTE_V4 = 9;       /* core IPv4 transit */
const bit<8> JOB_ROUTE_V6 = 10;

/* Session kinds found by the PPPoE and the L2TP session lookups (KIND_LAC:
 * a PPPoE session switched to L2TP, or an L2TP session switched back). */
const bit<8> KIND_NONE = 0;
const bit<8> KIND_TERM_V4 = 1;       /* terminated, IPv4 source checked */
const bit<8> KIND_TERM = 2;          /* terminated, source not checked yet */
const bit<8> KIND_LAC = 3;

control BngIngress(inout headers_t hdr, inout bng_meta_t meta) {

    action drop_for(DropReason_t reason) {
        meta.verdict = Verdict_t.DROP;
        meta.drop_reason = reason;
    }

    action punt_for(PuntReason_t reason) {
        meta.verdict = Verdict_t.PUNT;
        meta.punt_reason = reason;
    }

    /* A downstream packet over its session's MRU goes to the controller as
     * it came in: to_pppoe has already written the subscriber's MACs. */
    action punt_too_big() {
        punt_for(PuntReason_t.PACKET_TOO_BIG);
        meta.job = JOB_NONE;
        hdr.ethernet.dst_addr = meta.dst_mac;
        hdr.ethernet.src_addr = meta.src_mac;
    }

    /* The outer IPv4/UDP/L2TP of an L2TP data packet (LAC downstream keeps
     * the PPP protocol behind it). */
    action strip_l2tp() {
        hdr.ipv4.setInvalid();
        hdr.udp.setInvalid();
        hdr.l2tp.setInvalid();
        hdr.l2tp_length.setInvalid();
        hdr.l2tp_ids.setInvalid();
        hdr.l2tp_seq.setInvalid();
        hdr.l2tp_offset.setInvalid();
        hdr.ppp_ac.setInvalid();
    }

    /* Everything in front of a subscriber's IP packet: PPPoE, or L2TP. */
    action strip_to_inner_ip() {
        hdr.pppoe.setInvalid();
        strip_l2tp();
        hdr.ppp.setInvalid();
    }

    /* ---- lines ---------------------------------------------------------- */

    action set_line(line_id_t line_id) {
        meta.line_id = line_id;
    }

    action line_unknown() {
        meta.line_id = 0;
    }

    /* (port, s-tag, c-tag) -> line. Untagged lines use VLAN ids 0; a
     * single tag is the s-tag. Unknown lines still punt discovery (line 0)
     * so the controller can create lines on demand. Looked up only for
     * frames no session entry claims (discovery, PPP of sessions being set
     * up): the session tables key on (port, s-tag, c-tag) themselves and
     * carry their line id, so session traffic takes one lookup, not two. */
    table line_map {
        key = {
            meta.in_port : exact @name("port");
            meta.s_vid   : exact @name("s_vid");
            meta.c_vid   : exact @name("c_vid");
        }
        actions = { set_line; @defaultonly line_unknown; }
        const default_action = line_unknown();
        size = BNG_MAX_LINES;
    }

    /* ---- PPPoE sessions (upstream) --------------------------------------- */

    /* line_id: the session's line, for the packet_in of what it punts. */
    action pppoe_term(sess_idx_t sess_idx, bit<16> mss_clamp, line_id_t line_id) {
        meta.sess_idx = sess_idx;
        meta.mss_clamp = mss_clamp;
        meta.line_id = line_id;
    }

    action pppoe_lac(sess_idx_t sess_idx, tunnel_idx_t tunnel_idx, bit<16> peer_session_id,
                     line_id_t line_id) {
        meta.sess_idx = sess_idx;
        meta.tunnel_idx = tunnel_idx;
        meta.peer_session_id = peer_session_id;
        meta.line_id = line_id;
    }

    /* The upstream fast path and the IPv4 anti-spoof check in one lookup:
     * (line, session id, client MAC, client IPv4) of a terminated session,
     * the line as line_map keys it. */
    table pppoe_up_v4 {
        key = {
            meta.in_port    : exact @name("port");
            meta.s_vid      : exact @name("s_vid");
            meta.c_vid      : exact @name("c_vid");
            meta.session_id : exact @name("session_id");
            meta.src_mac    : exact @name("src_mac");
            meta.src_ipv4   : exact @name("src_ipv4");
        }
        actions = { pppoe_term; @defaultonly NoAction; }
        const default_action = NoAction();
        size = BNG_MAX_SESSIONS;
    }

    /* (line, session id, client MAC) -> session: terminated here, or
     * switched to an L2TP tunnel (LAC). */
    table pppoe_session {
        key = {
            meta.in_port    : exact @name("port");
            meta.s_vid      : exact @name("s_vid");
            meta.c_vid      : exact @name("c_vid");
            meta.session_id : exact @name("session_id");
            meta.src_mac    : exact @name("src_mac");
        }
        actions = { pppoe_term; pppoe_lac; @defaultonly NoAction; }
        const default_action = NoAction();
        size = BNG_MAX_SESSIONS;
    }

    action permit() { }

    /* A terminated session's IPv6 /64 prefixes (PPPoE and LNS sessions). */
    table ipv6_antispoof {
        key = {
            meta.sess_idx  : exact @name("sess_idx");
            meta.src_v6_hi : exact @name("src_prefix");
        }
        actions = { permit; @defaultonly NoAction; }
        const default_action = NoAction();
        size = BNG_MAX_SESSIONS;
    }

    /* ---- the BNG's own addresses ------------------------------------------ */

    action set_my_station() {
        meta.my_station = 1;
    }

    /* Router MACs per port: core-side frames for anyone else are dropped. */
    table my_station {
        key = {
            meta.in_port : exact @name("port");
            meta.dst_mac : exact @name("dst_mac");
        }
        actions = { set_my_station; @defaultonly NoAction; }
        const default_action = NoAction();
        size = 1024;
    }

    action set_local() {
        meta.is_local = 1;
        meta.no_lns = 0;
    }

    /* One of the BNG's addresses where no LNS session terminates (a
     * LAC-only L2TP endpoint, a gateway, a core interface): on Tofino, L2TP
     * data to it skips l2tp_up_v4, whose miss would cost the LAC's
     * downstream a lookup (the DPDK build looks its sessions up before its
     * addresses, so there it is set_local). set_local is the safe choice
     * when unsure: it only costs that lookup. */
    action set_local_no_lns() {
        meta.is_local = 1;
        meta.no_lns = 1;
    }

    action set_not_local() {
        meta.is_local = 0;                  /* no_lns is read only when local */
    }

    /* The BNG's IPv4 addresses: L2TP endpoints, subscriber gateways, core
     * interfaces. ARP for them and IPv4 to them are punted. Looked up for
     * the ARP target or the outer destination (the parser puts either in
     * meta.local_ip): on Tofino for every such packet, before the branches;
     * in the DPDK build only where no session claims the packet (see
     * BNG_LOCAL_IPV4_FIRST in defines.p4). Subscribers' packets to them are
     * found by fib_v4, which holds each as a /32 with set_local (a table is
     * applied once per packet on Tofino). */
    table local_ipv4 {
        key = { meta.local_ip : exact @name("addr"); }
        actions = { set_local; set_local_no_lns; @defaultonly set_not_local; }
        const default_action = set_not_local();
        size = 1024;
    }

    /* The BNG's IPv6 addresses, their solicited-node groups included (ND). */
    table local_ipv6 {
        key = {
            hdr.ipv6.dst_hi : exact @name("addr_hi");
            hdr.ipv6.dst_lo : exact @name("addr_lo");
        }
        actions = { set_local; @defaultonly set_not_local; }
        const default_action = set_not_local();
        size = 1024;
    }

    /* ---- downstream sessions --------------------------------------------- */

    action to_pppoe(sess_idx_t sess_idx, port_t port, bit<48> client_mac, bit<48> bng_mac,
                    bit<16> s_tpid, bit<16> s_vid, bit<16> c_vid, bit<16> pppoe_session_id,
                    bit<16> mss_clamp, bit<16> max_len) {
        meta.sess_idx = sess_idx;
        BNG_SET_OUTPUT_PORT(port);
        hdr.ethernet.dst_addr = client_mac;
        hdr.ethernet.src_addr = bng_mac;
        meta.s_tpid = s_tpid;
        meta.s_vid = s_vid;
        meta.c_vid = c_vid;
        meta.pppoe_session_id = pppoe_session_id;
        meta.mss_clamp = mss_clamp;
        BNG_SET_MAX_LEN(max_len)
        meta.job = JOB_PPPOE_DOWN_V4;
    }

    action to_l2tp(sess_idx_t sess_idx, tunnel_idx_t tunnel_idx, bit<16> peer_session_id,
                   bit<16> mss_clamp, bit<16> max_len) {
        meta.sess_idx = sess_idx;
        meta.tunnel_idx = tunnel_idx;
        meta.peer_session_id = peer_session_id;
        meta.mss_clamp = mss_clamp;
        BNG_SET_MAX_LEN(max_len)
        meta.job = JOB_LNS_DOWN_V4;
    }

    /* Subscriber /32 -> session (PPPoE or LNS). Exact, so that it is
     * updated incrementally; aggregates go in fib_v4. max_len: the largest
     * IPv4 total length (in ipv6_session: IPv6 payload length) the
     * subscriber's MRU takes; larger packets are punted (PACKET_TOO_BIG),
     * not sent for its CPE to drop. */
    table ipv4_session {
        key = { hdr.ipv4.dst_addr : exact @name("dst_ipv4"); }
        actions = { to_pppoe; to_l2tp; @defaultonly NoAction; }
        const default_action = NoAction();
        size = BNG_MAX_SESSIONS;
    }

    /* Subscriber /64 -> session. */
    table ipv6_session {
        key = { hdr.ipv6.dst_hi : exact @name("dst_prefix"); }
        actions = { to_pppoe; to_l2tp; @defaultonly NoAction; }
        const default_action = NoAction();
        size = BNG_MAX_SESSIONS;
    }

    /* ---- L2TP data sessions ------------------------------------------------ */

    action lns_term(sess_idx_t sess_idx, bit<16> mss_clamp) {
        meta.sess_idx = sess_idx;
        meta.mss_clamp = mss_clamp;
    }

    action lac_to_pppoe(sess_idx_t sess_idx, port_t port, bit<48> client_mac, bit<48> bng_mac,
                        bit<16> s_tpid, bit<16> s_vid, bit<16> c_vid, bit<16> pppoe_session_id) {
        meta.sess_idx = sess_idx;
        BNG_SET_OUTPUT_PORT(port);
        hdr.ethernet.dst_addr = client_mac;
        hdr.ethernet.src_addr = bng_mac;
        meta.s_tpid = s_tpid;
        meta.s_vid = s_vid;
        meta.c_vid = c_vid;
        meta.pppoe_session_id = pppoe_session_id;
    }

    /* The LNS upstream fast path and the IPv4 anti-spoof check in one
     * lookup, as pppoe_up_v4 is for PPPoE: (local IP, peer IP, local tunnel
     * id, local session id, client IPv4) of a terminated session. */
    table l2tp_up_v4 {
        key = {
            meta.src_ipv4   : exact @name("src_ipv4");
            meta.local_ip   : exact @name("local_ip");
            meta.peer_ip    : exact @name("peer_ip");
            meta.tunnel_id  : exact @name("tunnel_id");
            meta.l2tp_session_id : exact @name("session_id");
        }
        actions = { lns_term; @defaultonly NoAction; }
        const default_action = NoAction();
        size = BNG_MAX_SESSIONS;
    }

    /* (local IP, peer IP, local tunnel id, local session id) -> session:
     * terminated here (LNS) or switched back to PPPoE (LAC). */
    table l2tp_session {
        key = {
            meta.local_ip   : exact @name("local_ip");
            meta.peer_ip    : exact @name("peer_ip");
            meta.tunnel_id  : exact @name("tunnel_id");
            meta.l2tp_session_id : exact @name("session_id");
        }
        actions = { lns_term; lac_to_pppoe; @defaultonly NoAction; }
        const default_action = NoAction();
        size = BNG_MAX_SESSIONS;
    }

    /* Writes the outer headers directly (they are made valid before the
     * lookup): no metadata to carry them. */
    action set_tunnel(bit<32> local_ip, bit<32> peer_ip, bit<16> peer_tunnel_id,
                      bit<16> peer_port, nexthop_id_t nexthop_id) {
        hdr.ipv4.src_addr = local_ip;
        hdr.ipv4.dst_addr = peer_ip;
        hdr.l2tp_ids.tunnel_id = peer_tunnel_id;
        hdr.udp.dst_port = peer_port;
        meta.nexthop_id = nexthop_id;
    }

    /* set_tunnel with the next hop's L2 rewrite in the entry, once the next
     * hop is resolved: tunnelled packets then skip the nexthop lookup. The
     * controller keeps it in step with the next hop, as for fib_v4. */
    action set_tunnel_l2(bit<32> local_ip, bit<32> peer_ip, bit<16> peer_tunnel_id,
                         bit<16> peer_port, port_t port, bit<48> smac, bit<48> dmac, bit<16> vid) {
        hdr.ipv4.src_addr = local_ip;
        hdr.ipv4.dst_addr = peer_ip;
        hdr.l2tp_ids.tunnel_id = peer_tunnel_id;
        hdr.udp.dst_port = peer_port;
        BNG_SET_OUTPUT_PORT(port);
        hdr.ethernet.src_addr = smac;
        hdr.ethernet.dst_addr = dmac;
        meta.s_vid = vid;
        meta.nexthop_id = NEXTHOP_INLINE;
    }

    /* Tunnel -> outer header and the next hop toward the peer (resolved by
     * the controller, so tunnelled packets need no FIB lookup). */
    table l2tp_tunnel {
        key = { meta.tunnel_idx : exact @name("tunnel_idx"); }
        actions = { set_tunnel; set_tunnel_l2; @defaultonly NoAction; }
        const default_action = NoAction();
        size = BNG_MAX_TUNNELS;
    }

    /* ---- routing ---------------------------------------------------------- */

    action set_nexthop(nexthop_id_t nexthop_id) {
        meta.nexthop_id = nexthop_id;
    }

    action no_route() {
        meta.nexthop_id = 0;
    }

    /* A route whose next hop is resolved, with what nexthop's set_l2 would
     * write: routed IPv4 then takes one lookup, not two. The controller
     * keeps it in step with the next hop (set_nexthop while unresolved). */
    action set_nexthop_l2(port_t port, bit<48> smac, bit<48> dmac, bit<16> vid) {
        BNG_SET_OUTPUT_PORT(port);
        hdr.ethernet.src_addr = smac;
        hdr.ethernet.dst_addr = dmac;
        meta.s_vid = vid;
        meta.nexthop_id = NEXTHOP_INLINE;
    }

    /* set_local: a /32 of one of the BNG's addresses (see local_ipv4). */
    table fib_v4 {
        key = { meta.lookup_ipv4 : lpm @name("dst_ipv4"); }
        actions = { set_nexthop; set_nexthop_l2; set_local; @defaultonly no_route; }
        const default_action = no_route();
        size = BNG_FIB_SIZE;
    }

    table fib_v6 {
        key = { meta.lookup_v6_hi : lpm @name("dst_prefix"); }
        actions = { set_nexthop; @defaultonly no_route; }
        const default_action = no_route();
        size = BNG_FIB_SIZE;
    }

    action set_l2(port_t port, bit<48> smac, bit<48> dmac, bit<16> vid) {
        BNG_SET_OUTPUT_PORT(port);
        hdr.ethernet.src_addr = smac;
        hdr.ethernet.dst_addr = dmac;
        meta.s_vid = vid;
    }

    /* Next hop -> port, MACs and VLAN (0: untagged). */
    table nexthop {
        key = { meta.nexthop_id : exact @name("nexthop_id"); }
        actions = { set_l2; @defaultonly NoAction; }
        const default_action = NoAction();
        size = BNG_MAX_NEXTHOPS;
    }

/* The L2TP data session lookups: LNS upstream with its IPv4 source first
 * where up_v4 holds, then the session alone. Written once, applied where
 * BNG_LOCAL_IPV4_FIRST puts them: under the local_ipv4 hit on Tofino, whose
 * no_lns then spares a LAC-only address the l2tp_up_v4 miss; before
 * local_ipv4 elsewhere, where no_lns is not known yet. */
#define BNG_L2TP_SESSION_LOOKUPS(up_v4) \
    if (up_v4) { \
        if (l2tp_up_v4.apply().hit) { \
            kind = KIND_TERM_V4; \
        } \
    } \
    if (kind == KIND_NONE) { \
        switch (l2tp_session.apply().action_run) { \
            lns_term: { kind = KIND_TERM; } \
            lac_to_pppoe: { kind = KIND_LAC; } \
        } \
    }

    apply {
        meta.verdict = Verdict_t.DROP;
        meta.drop_reason = DropReason_t.NONE;
        meta.punt_reason = PuntReason_t.NONE;
        meta.direction = Direction_t.NONE;
        meta.job = JOB_NONE;
        meta.sess_idx = 0;
        meta.sess_bytes = 0;
        meta.mss_clamp = 0;
        meta.line_id = 0;
        meta.nexthop_id = 0;
        meta.my_station = 0;
        meta.ipv4_csum_update = 0;
        meta.inner_ipv4_csum_update = 0;
        meta.mss_update = 0;
        bit<8> kind = KIND_NONE;

        /* ================= classification ================= */
        /* On Tofino each table is applied in one place: the lookups of
         * several branches come first. The DPDK build, where every lookup
         * costs in turn, applies local_ipv4 in the two branches that need
         * it instead (BNG_LOCAL_IPV4_FIRST, defines.p4). */
        if (hdr.ipv4.isValid() || hdr.ipv6.isValid()) {
            my_station.apply();
        }
#ifdef BNG_LOCAL_IPV4_FIRST
        if (hdr.ipv4.isValid() || hdr.arp.isValid()) {
            local_ipv4.apply();
        }
#else
        meta.is_local = 0;                  /* looked up where a branch needs it */
#endif
        if (BNG_PAST_FRAME(meta.parsed_len)) {
            drop_for(DropReason_t.MALFORMED);          /* truncated */
        } else if (hdr.pppoe.isValid()) {
            /* ---- access side: PPPoE ---- */
            meta.sess_bytes = meta.claim_len - 2;        /* PPP payload */
            meta.claim_len = meta.claim_len + 6;
            meta.claim_len = meta.claim_len + meta.l2_len;  /* frame bytes PPPoE claims */
            if (!hdr.ppp.isValid()) {
                /* discovery: PADI, PADO, PADR, PADS, PADT */
                if (hdr.pppoe.ver_type != 0x11 || BNG_PAST_FRAME(meta.claim_len)) {
                    drop_for(DropReason_t.MALFORMED);
                } else {
                    punt_for(PuntReason_t.PPPOE_DISCOVERY);
                }
            } else if (hdr.pppoe.ver_type != 0x11 || hdr.pppoe.code != 0
                       || hdr.pppoe.session_id == 0 || hdr.pppoe.length < 2
                       || BNG_PAST_FRAME(meta.claim_len)) {
                drop_for(DropReason_t.MALFORMED);
            } else {
                meta.direction = Direction_t.UPSTREAM;
                if (hdr.inner_ipv4.isValid()) {
                    if (pppoe_up_v4.apply().hit) {
                        kind = KIND_TERM_V4;
                    }
                }
                if (kind == KIND_NONE) {
                    switch (pppoe_session.apply().action_run) {
                        pppoe_term: { kind = KIND_TERM; }
                        pppoe_lac: { kind = KIND_LAC; }
                    }
                }
            }
            if (kind == KIND_NONE && meta.drop_reason == DropReason_t.NONE) {
                line_map.apply();           /* a session's entry gave its line */
            }
            /* session frames (discovery and malformed ones were decided above) */
            if (meta.direction == Direction_t.UPSTREAM) {
                if (kind == KIND_LAC) {
                    meta.job = JOB_LAC_UP;
                } else if (kind == KIND_TERM_V4) {
                    meta.inner_len = meta.inner_len + 2;
                    if (hdr.inner_ipv4.version_ihl != 0x45 || meta.inner_len != hdr.pppoe.length
                        || BNG_IPV4_LEN_BELOW_HEADER(hdr.inner_ipv4.total_len)) {
                        drop_for(DropReason_t.MALFORMED);
                    } else {
                        meta.job = JOB_ROUTE_UP_V4;
                    }
                } else if (kind == KIND_TERM) {
                    if (hdr.inner_ipv4.isValid()) {
                        drop_for(DropReason_t.SPOOFED);
                    } else if (hdr.inner_ipv6.isValid()) {
                        meta.inner_len = meta.inner_len + 42;
                        if (meta.ipv6_class == IPV6_BAD_VERSION
                            || meta.inner_len != hdr.pppoe.length) {
                            drop_for(DropReason_t.MALFORMED);
                        } else {
                            meta.job = JOB_ROUTE_UP_V6;
                        }
                    } else if (hdr.ppp.protocol == PPP_IPV4 || hdr.ppp.protocol == PPP_IPV6) {
                        drop_for(DropReason_t.MALFORMED);   /* IP shorter than its header */
                    } else {
                        punt_for(PuntReason_t.PPP_CONTROL);
                    }
                } else if (meta.line_id == 0) {
                    drop_for(DropReason_t.UNKNOWN_LINE);
                } else if (hdr.ppp.protocol == PPP_IPV4 || hdr.ppp.protocol == PPP_IPV6) {
                    /* No session yet: LCP/auth/NCP of a session being set up
                     * go to the controller, data is dropped. */
                    drop_for(DropReason_t.NO_SESSION);
                } else {
                    punt_for(PuntReason_t.PPP_CONTROL);
                }
            }
        } else if (hdr.arp.isValid()) {
#ifndef BNG_LOCAL_IPV4_FIRST
            local_ipv4.apply();
#endif
            if (meta.is_local == 1 || hdr.arp.spa == hdr.arp.tpa) {
                /* ours; or a gratuitous ARP (RFC 5227 announcement): the
                 * controller learns a next hop's new MAC from it (a router
                 * replaced) instead of at its next refresh */
                punt_for(PuntReason_t.ARP);
            } else {
                drop_for(DropReason_t.NOT_FOR_US);
            }
        } else if (hdr.ipv4.isValid()) {
            /* ---- core side: IPv4 (routed, downstream, L2TP) ---- */
            meta.claim_len = meta.claim_len + meta.l2_len;
            if (meta.my_station == 0) {
                drop_for(DropReason_t.NOT_FOR_US);
            } else if (hdr.ipv4.version_ihl != 0x45 || BNG_PAST_FRAME(meta.claim_len)) {
                drop_for(DropReason_t.MALFORMED);
            } else if (BNG_IPV4_LEN_BELOW_HEADER(hdr.ipv4.total_len)) {
                drop_for(DropReason_t.MALFORMED);
            } else if (BNG_IPV4_CSUM_BAD) {
                drop_for(DropReason_t.BAD_CHECKSUM);
            } else {
#ifndef BNG_LOCAL_IPV4_FIRST
                /* An L2TP session's entry holds one of the BNG's addresses
                 * (its local_ip) and a subscriber's address is none of them:
                 * only what no session claims needs local_ipv4. */
                if (hdr.l2tp.isValid() && meta.l2tp_class == L2TP_DATA) {
                    BNG_L2TP_SESSION_LOOKUPS(hdr.inner_ipv4.isValid())
                }
                if (kind != KIND_NONE) {
                    meta.is_local = 1;
                } else {
                    if (hdr.ipv4.ttl > 1) {
                        ipv4_session.apply();
                    }
                    if (meta.job == JOB_NONE) {
                        local_ipv4.apply();
                    }
                }
#endif
                if (meta.is_local == 1 && hdr.l2tp.isValid()) {
#ifdef BNG_LOCAL_IPV4_FIRST
                    /* The session lookups come before the length checks,
                     * which need none of their results: on Tofino they then
                     * sit beside the length arithmetic, not after it, in the
                     * longest chain of stages (LNS upstream). A malformed
                     * packet's lookup results are not used. */
                    if (meta.l2tp_class == L2TP_DATA) {
                        BNG_L2TP_SESSION_LOOKUPS(hdr.inner_ipv4.isValid() && meta.no_lns == 0)
                    }
#endif
                    /* PPP carried = UDP length - UDP, L2TP and 0xff03 */
                    meta.ppp_len = meta.ppp_len + 20;
                    if (meta.l2tp_class == L2TP_CONTROL) {
                        punt_for(PuntReason_t.L2TP_CONTROL);
                    } else if (meta.l2tp_class == L2TP_MALFORMED) {
                        drop_for(DropReason_t.MALFORMED);
                    } else if (meta.l2tp_class == L2TP_OFFSET) {
                        drop_for(DropReason_t.UNSUPPORTED);
                    } else if (meta.ppp_len != hdr.ipv4.total_len) {
                        drop_for(DropReason_t.MALFORMED);     /* UDP and IPv4 lengths disagree */
                    } else if (BNG_L2TP_LENGTH_BAD) {
                        drop_for(DropReason_t.MALFORMED);     /* L2TP Length and UDP disagree */
                    } else {
                        meta.ppp_len = meta.ppp_len - 28;
                        meta.ppp_len = meta.ppp_len - meta.l2tp_len;
                        if (hdr.ppp_ac.isValid()) {
                            meta.ppp_len = meta.ppp_len - 2;
                        }
                        /* a wrapped (negative) length is larger than the frame */
                        if (meta.ppp_len < 2 || BNG_PAST_FRAME((bit<32>) meta.ppp_len)) {
                            drop_for(DropReason_t.MALFORMED);
                        } else {
                            meta.sess_bytes = (bit<32>) meta.ppp_len;
                            meta.sess_bytes = meta.sess_bytes - 2;
                            if (kind == KIND_LAC) {
                                meta.direction = Direction_t.DOWNSTREAM;
                                meta.job = JOB_LAC_DOWN;
                            } else if (kind == KIND_NONE) {
                                if (hdr.ppp.protocol == PPP_IPV4 || hdr.ppp.protocol == PPP_IPV6) {
                                    drop_for(DropReason_t.NO_SESSION);
                                } else {
                                    punt_for(PuntReason_t.L2TP_PPP_CONTROL);
                                }
                            } else {
                                meta.direction = Direction_t.UPSTREAM;
                                if (hdr.inner_ipv4.isValid()) {
                                    meta.inner_len = meta.inner_len + 2;
                                    if (hdr.inner_ipv4.version_ihl != 0x45
                                        || meta.inner_len != meta.ppp_len
                                        || BNG_IPV4_LEN_BELOW_HEADER(hdr.inner_ipv4.total_len)) {
                                        drop_for(DropReason_t.MALFORMED);
                                    } else if (kind == KIND_TERM_V4) {
                                        meta.job = JOB_ROUTE_UP_V4;
                                    } else {
                                        /* the session, not from its address */
                                        drop_for(DropReason_t.SPOOFED);
                                    }
                                } else if (hdr.inner_ipv6.isValid()) {
                                    meta.inner_len = meta.inner_len + 42;
                                    if (meta.ipv6_class == IPV6_BAD_VERSION
                                        || meta.inner_len != meta.ppp_len) {
                                        drop_for(DropReason_t.MALFORMED);
                                    } else {
                                        meta.job = JOB_ROUTE_UP_V6;
                                    }
                                } else if (hdr.ppp.protocol == PPP_IPV4
                                           || hdr.ppp.protocol == PPP_IPV6) {
                                    drop_for(DropReason_t.MALFORMED);
                                } else {
                                    punt_for(PuntReason_t.L2TP_PPP_CONTROL);
                                }
                            }
                        }
                    }
                } else if (meta.is_local == 1) {
                    punt_for(PuntReason_t.LOCAL_IPV4);
                } else if (hdr.ipv4.ttl <= 1) {
                    punt_for(PuntReason_t.TTL_EXPIRED);
                } else {
#ifdef BNG_LOCAL_IPV4_FIRST
                    ipv4_session.apply();
#endif
                    if (meta.job == JOB_NONE) {
                        meta.job = JOB_ROUTE_V4;
                    } else {
                        meta.direction = Direction_t.DOWNSTREAM;
                        meta.sess_bytes = (bit<32>) hdr.ipv4.total_len;
                        if (hdr.udp.isValid() && meta.job == JOB_LNS_DOWN_V4) {
                            /* UDP to port 1701 was parsed as L2TP: its headers
                             * cannot follow a pushed L2TP header. */
                            drop_for(DropReason_t.UNSUPPORTED);
                            meta.job = JOB_NONE;
                        } else if (BNG_IPV4_OVER_MAX_LEN) {
                            punt_too_big();
                        } else if (hdr.udp.isValid()) {
                            /* a TCP header parsed inside that L2TP is not the
                             * subscriber's own: clamping it would leave the
                             * outer UDP checksum wrong */
                            meta.mss_clamp = 0;
                        }
                    }
                }
            }
        } else if (hdr.ipv6.isValid()) {
            /* ---- core side: IPv6 ---- */
            meta.claim_len = meta.claim_len + 40;
            meta.claim_len = meta.claim_len + meta.l2_len;
            if (meta.my_station == 0 && meta.ipv6_class != IPV6_MULTICAST) {
                drop_for(DropReason_t.NOT_FOR_US);
            } else if (meta.ipv6_class == IPV6_BAD_VERSION || BNG_PAST_FRAME(meta.claim_len)) {
                drop_for(DropReason_t.MALFORMED);
            } else {
                local_ipv6.apply();
                if (meta.is_local == 1) {
                    punt_for(PuntReason_t.LOCAL_IPV6);
                } else if (meta.my_station == 0) {
                    drop_for(DropReason_t.NOT_FOR_US);     /* multicast not for us */
                } else if (meta.ipv6_class != IPV6_UNICAST || hdr.ipv6.src_hi[63:54] == 0x3fa) {
                    /* link-local source or destination, or multicast, and
                     * not ours: never routed off its link (RFC 4291 2.5.6) */
                    drop_for(DropReason_t.NOT_FOR_US);
                } else if (hdr.ipv6.hop_limit <= 1) {
                    punt_for(PuntReason_t.TTL_EXPIRED);
                } else {
                    ipv6_session.apply();
                    if (meta.job == JOB_NONE) {
                        meta.job = JOB_ROUTE_V6;
                    } else {
                        meta.direction = Direction_t.DOWNSTREAM;
                        meta.sess_bytes = (bit<32>) hdr.ipv6.payload_len;
                        meta.sess_bytes = meta.sess_bytes + 40;
                        if (BNG_IPV6_OVER_MAX_LEN) {
                            punt_too_big();
                        } else if (meta.job == JOB_PPPOE_DOWN_V4) {
                            meta.job = JOB_PPPOE_DOWN_V6;
                        } else {
                            meta.job = JOB_LNS_DOWN_V6;
                        }
                    }
                }
            }
        } else {
            drop_for(DropReason_t.UNSUPPORTED);
        }

        /* Subscriber upstream IP: checks shared by PPPoE and LNS sessions. */
        if (meta.job == JOB_ROUTE_UP_V4) {
            if (BNG_INNER_IPV4_CSUM_BAD) {
                drop_for(DropReason_t.BAD_CHECKSUM);
                meta.job = JOB_NONE;
            }
        } else if (meta.job == JOB_ROUTE_UP_V6) {
            if (meta.ipv6_class == IPV6_LINK_LOCAL || meta.ipv6_class == IPV6_MULTICAST) {
                /* RS, DHCPv6, NS to the gateway: link-local, before the
                 * source check (their source is link-local too) */
                punt_for(PuntReason_t.SUBSCRIBER_IPV6_CONTROL);
                meta.job = JOB_NONE;
            } else if (!ipv6_antispoof.apply().hit) {
                drop_for(DropReason_t.SPOOFED);
                meta.job = JOB_NONE;
            } else if (hdr.inner_ipv6.hop_limit <= 1) {
                punt_for(PuntReason_t.TTL_EXPIRED);
                meta.job = JOB_NONE;
            }
        }

        /* ================= jobs: header rewrites ================= */
        if (meta.job == JOB_ROUTE_UP_V4 || meta.job == JOB_ROUTE_V4) {
            if (meta.job == JOB_ROUTE_UP_V4) {
                meta.lookup_ipv4 = hdr.inner_ipv4.dst_addr;
            } else {
                meta.lookup_ipv4 = hdr.ipv4.dst_addr;
            }
            meta.is_local = 0;              /* an LNS packet's outer lookup set it */
            fib_v4.apply();
            if (meta.is_local == 1) {
                /* a subscriber's ping to its gateway (core-side packets to
                 * our addresses were punted by classification) */
                punt_for(PuntReason_t.LOCAL_IPV4);
                meta.job = JOB_NONE;
            } else if (meta.job == JOB_ROUTE_UP_V4) {
                if (hdr.inner_ipv4.ttl <= 1) {
                    punt_for(PuntReason_t.TTL_EXPIRED);
                    meta.job = JOB_NONE;
                } else {
                    strip_to_inner_ip();
                    hdr.inner_ipv4.ttl = hdr.inner_ipv4.ttl - 1;
                    meta.inner_ipv4_csum_update = CSUM_TTL_DECREMENTED;
                }
            } else {
                hdr.ipv4.ttl = hdr.ipv4.ttl - 1;
                meta.ipv4_csum_update = CSUM_TTL_DECREMENTED;
            }
            meta.l3_type = ETHERTYPE_IPV4;
        } else if (meta.job == JOB_ROUTE_UP_V6 || meta.job == JOB_ROUTE_V6) {
            if (meta.job == JOB_ROUTE_UP_V6) {
                strip_to_inner_ip();
                hdr.inner_ipv6.hop_limit = hdr.inner_ipv6.hop_limit - 1;
                meta.lookup_v6_hi = hdr.inner_ipv6.dst_hi;
            } else {
                hdr.ipv6.hop_limit = hdr.ipv6.hop_limit - 1;
                meta.lookup_v6_hi = hdr.ipv6.dst_hi;
            }
            fib_v6.apply();
            meta.l3_type = ETHERTYPE_IPV6;
        } else if (meta.job == JOB_LAC_UP || meta.job == JOB_LNS_DOWN_V4
                   || meta.job == JOB_LNS_DOWN_V6) {
            /* push IPv4/UDP/L2TP/PPP toward the tunnel peer; lengths are
             * what is carried plus UDP 8, L2TP 6, 0xff03 2 (and IPv4 20) */
            hdr.ipv4.setValid();
            hdr.udp.setValid();
            hdr.l2tp_ids.setValid();
            if (meta.job == JOB_LAC_UP) {
                hdr.udp.length = hdr.pppoe.length + 16;      /* PPP protocol + payload */
                hdr.ipv4.total_len = hdr.pppoe.length + 36;
                hdr.pppoe.setInvalid();
            } else if (meta.job == JOB_LNS_DOWN_V4) {
                hdr.inner_ipv4 = hdr.ipv4;
                hdr.inner_ipv4.ttl = hdr.inner_ipv4.ttl - 1;
                meta.inner_ipv4_csum_update = CSUM_TTL_DECREMENTED;
                hdr.ppp.setValid();
                hdr.ppp.protocol = PPP_IPV4;
                hdr.udp.length = hdr.ipv4.total_len + 18;
                hdr.ipv4.total_len = hdr.ipv4.total_len + 38;
            } else {
                hdr.inner_ipv6 = hdr.ipv6;
                hdr.inner_ipv6.hop_limit = hdr.inner_ipv6.hop_limit - 1;
                hdr.ipv6.setInvalid();
                hdr.ppp.setValid();
                hdr.ppp.protocol = PPP_IPV6;
                hdr.udp.length = hdr.inner_ipv6.payload_len + 58;
                hdr.ipv4.total_len = hdr.inner_ipv6.payload_len + 78;
            }
            if (l2tp_tunnel.apply().hit) {
                hdr.ppp_ac.setValid();
                hdr.ppp_ac.address_control = PPP_ADDRESS_CONTROL;
                hdr.l2tp.setValid();
                hdr.l2tp.flags = 0;
                hdr.l2tp.version = L2TP_VERSION;
                hdr.l2tp_ids.session_id = meta.peer_session_id;
                hdr.udp.src_port = L2TP_PORT;
                hdr.udp.checksum = 0;
                hdr.ipv4.version_ihl = 0x45;
                hdr.ipv4.diffserv = 0;
                hdr.ipv4.identification = 0;
                hdr.ipv4.flags_frag = 0;
                hdr.ipv4.ttl = 64;
                hdr.ipv4.protocol = IP_PROTO_UDP;
                meta.ipv4_csum_update = CSUM_RECOMPUTE;
                meta.l3_type = ETHERTYPE_IPV4;
            } else {
                drop_for(DropReason_t.NO_SESSION);       /* session without its tunnel */
                meta.job = JOB_NONE;
            }
        } else if (meta.job == JOB_LAC_DOWN || meta.job == JOB_PPPOE_DOWN_V4
                   || meta.job == JOB_PPPOE_DOWN_V6) {
            /* push PPPoE (and tags) toward the subscriber; the session's
             * action wrote the MACs */
            hdr.pppoe.setValid();
            hdr.pppoe.ver_type = 0x11;
            hdr.pppoe.code = 0;
            hdr.pppoe.session_id = meta.pppoe_session_id;
            if (meta.job == JOB_LAC_DOWN) {
                hdr.pppoe.length = meta.ppp_len;
                strip_l2tp();
            } else if (meta.job == JOB_PPPOE_DOWN_V4) {
                hdr.pppoe.length = hdr.ipv4.total_len + 2;
                hdr.encap_ppp.setValid();
                hdr.encap_ppp.protocol = PPP_IPV4;
                hdr.ipv4.ttl = hdr.ipv4.ttl - 1;
                meta.ipv4_csum_update = CSUM_TTL_DECREMENTED;
            } else {
                hdr.pppoe.length = hdr.ipv6.payload_len + 42;
                hdr.encap_ppp.setValid();
                hdr.encap_ppp.protocol = PPP_IPV6;
                hdr.ipv6.hop_limit = hdr.ipv6.hop_limit - 1;
            }
            if (meta.c_vid != 0) {
                hdr.c_tag.setValid();
                hdr.c_tag.tci = meta.c_vid;
                hdr.c_tag.ether_type = ETHERTYPE_PPPOE_SESSION;
            } else {
                hdr.c_tag.setInvalid();
            }
            if (meta.s_vid != 0) {
                hdr.s_tag.setValid();
                hdr.s_tag.tci = meta.s_vid;
                hdr.s_tag.ether_type = ETHERTYPE_PPPOE_SESSION;
                if (meta.c_vid != 0) {
                    hdr.s_tag.ether_type = ETHERTYPE_VLAN;
                }
                hdr.ethernet.ether_type = meta.s_tpid;
            } else {
                hdr.s_tag.setInvalid();
                hdr.ethernet.ether_type = ETHERTYPE_PPPOE_SESSION;
                if (meta.c_vid != 0) {
                    hdr.ethernet.ether_type = ETHERTYPE_VLAN;
                }
            }
            meta.verdict = Verdict_t.FORWARD;
        }

        /* Routed and tunnelled packets: next hop (its action, or the
         * route's or tunnel's own, writes the MACs and the VLAN to push into
         * meta.s_vid). */
        if (meta.job == JOB_ROUTE_UP_V4 || meta.job == JOB_ROUTE_V4
            || meta.job == JOB_ROUTE_UP_V6 || meta.job == JOB_ROUTE_V6
            || meta.job == JOB_LAC_UP || meta.job == JOB_LNS_DOWN_V4
            || meta.job == JOB_LNS_DOWN_V6) {
            if (meta.nexthop_id != 0 && meta.nexthop_id != NEXTHOP_INLINE) {
                if (!nexthop.apply().hit) {
                    meta.nexthop_id = 0;                /* not resolved */
                }
            }
            if (meta.nexthop_id == 0) {
                drop_for(DropReason_t.NO_ROUTE);
            } else {
                hdr.c_tag.setInvalid();
                if (meta.s_vid != 0) {
                    hdr.s_tag.setValid();
                    hdr.s_tag.tci = meta.s_vid;
                    hdr.s_tag.ether_type = meta.l3_type;
                    hdr.ethernet.ether_type = ETHERTYPE_VLAN;
                } else {
                    hdr.s_tag.setInvalid();
                    hdr.ethernet.ether_type = meta.l3_type;
                }
                meta.verdict = Verdict_t.FORWARD;
            }
        }

        /* TCP MSS clamping on SYNs of sessions that ask for it. */
        if (meta.verdict == Verdict_t.FORWARD && meta.mss_clamp != 0 && hdr.tcp_mss.isValid()) {
            if ((hdr.tcp.flags & TCP_FLAG_SYN) != 0 && hdr.tcp_mss.kind == TCP_OPTION_MSS
                && hdr.tcp_mss.len == 4) {
                if (BNG_MSS_ABOVE_CLAMP) {
                    meta.mss_update = 1;
                }
            }
        }
    }
}

#endif
