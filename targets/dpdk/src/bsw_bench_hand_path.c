/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `bench_bng.py --hand-written`: two paths of the BNG program, PPPoE
 * upstream and LNS upstream (IPv4 to the FIB, untagged lines), written out
 * in C by hand and run by the worker in place of the SWX pipeline, over
 * that pipeline's own input and output ports, tables, meters and counters.
 *
 * This is a measuring instrument, not a data path. It forwards the packets
 * of its one path and drops every other packet, which the bench then
 * refuses (it checks that the sessions' counters account for every packet
 * received). What it measures is what the program's work on that path
 * costs as straight-line code: header fields read and written in place,
 * the tables' lookup functions called directly, no instruction groups, no
 * SWX threads, no metadata resets, no header copies into and out of the
 * thread's header storage. That bounds what another way of running the
 * same program (code generated per path) could reach with these ports and
 * tables, which is the question the data plane's throughput target leaves
 * open.
 *
 * Each path does the checks the program does on that path and touches the
 * same state the pipeline does:
 *  - pppoe_up: PPPoE session header checks (version/type, code, session id,
 *    lengths against the frame), the inner IPv4 header (version/IHL, no
 *    fragment offset, total length against PPPoE's, its checksum), the
 *    pppoe_up_v4 lookup (line, session, MAC and source address in one key),
 *    the FIB, TTL, the TTL's checksum update (RFC 1624), the session's meter
 *    and counters, the PPPoE header stripped and the next hop's MACs.
 *  - lns_up: my_station, the outer IPv4 header (checks and checksum), UDP to
 *    1701, L2TPv2 data without L/S/O bits, optional 0xff03, UDP length
 *    against IPv4's and the PPP payload against the frame, the inner IPv4
 *    header as above, the l2tp_up_v4 lookup, then as pppoe_up.
 * The lookups' keys are written into thread 0's metadata at the offsets
 * the tables read them from, each field at its own width.
 *
 * The names below are the compiled program's (p4src/build/bng/bng.spec);
 * bsw_bench_hand_path_set() resolves every one of them and refuses a
 * pipeline that lacks one, so a change to the program fails loudly here.
 * Reaches into the pipeline's internals (rte_swx_pipeline_internal.h of the
 * same DPDK version, as the rest of the switch does).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <rte_byteorder.h>
#include <rte_cycles.h>
#include <rte_meter.h>

#include "bsw_internal.h"
#include "rte_swx_pipeline_internal.h"
#include "bsw_swx_meter.h"

/* Receive tries between two epochs; output flushes every FLUSH_EVERY. */
#define BATCH 1024
#define FLUSH_EVERY 64

enum hand_role { HAND_PPPOE_UP = 1, HAND_LNS_UP };

struct bsw_hand_path {
	enum hand_role role;
	uint32_t port;			/* the input port it polls */
	int prelude;			/* input ports put the frame length in front */
	uint8_t *meta;			/* thread 0's metadata: lookups read their keys there */
	/* byte offsets of metadata fields, each of the width named (resolve() checks) */
	uint32_t in_port32, dst_mac48, src_mac48, s_vid16, c_vid16, session_id16, src_ipv4_32,
		local_ip32, peer_ip32, tunnel_id16, l2tp_session_id16, lookup_ipv4_32;
	uint32_t t_pppoe_up_v4, t_l2tp_up_v4, t_my_station, t_fib_v4;
	uint32_t a_pppoe_term, a_lns_term, a_set_nexthop_l2;
	/* byte offsets of action arguments, as above */
	uint32_t pppoe_sess32, lns_sess32, nh_port32, nh_smac48, nh_dmac48, nh_vid16;
	struct regarray_runtime *up_packets, *up_bytes;
	struct metarray_runtime *meter_up;
};

/* ---- names ---------------------------------------------------------------- */

/* The byte offset of field `name` of st, which must be `bits` wide. */
static int
offset_of(const struct struct_type *st, const char *what, const char *name, uint32_t bits,
	  uint32_t *offset)
{
	uint32_t i;

	for (i = 0; i < st->n_fields; i++) {
		const struct field *f = &st->fields[i];

		if (strcmp(f->name, name))
			continue;
		if (f->n_bits != bits || f->offset % 8) {
			bsw_set_error("hand-written path: %s's field %s is %u bits at bit %u, not %u bits",
				      what, name, f->n_bits, f->offset, bits);
			return -EINVAL;
		}
		*offset = f->offset / 8;
		return 0;
	}
	bsw_set_error("hand-written path: %s has no field %s", what, name);
	return -EINVAL;
}

static int
table_of(struct rte_swx_pipeline *p, const char *name, uint32_t *id)
{
	struct table *t;

	TAILQ_FOREACH(t, &p->tables, node)
		if (!strcmp(t->name, name)) {
			*id = t->id;
			return 0;
		}
	bsw_set_error("hand-written path: the pipeline has no table %s", name);
	return -EINVAL;
}

static struct action *
action_of(struct rte_swx_pipeline *p, const char *name)
{
	struct action *a;

	TAILQ_FOREACH(a, &p->actions, node)
		if (!strcmp(a->name, name))
			return a;
	bsw_set_error("hand-written path: the pipeline has no action %s", name);
	return NULL;
}

static struct regarray_runtime *
regarray_of(struct rte_swx_pipeline *p, const char *name)
{
	struct regarray *r;

	TAILQ_FOREACH(r, &p->regarrays, node)
		if (!strcmp(r->name, name))
			return &p->regarray_runtime[r->id];
	bsw_set_error("hand-written path: the pipeline has no register array %s", name);
	return NULL;
}

static struct metarray_runtime *
metarray_of(struct rte_swx_pipeline *p, const char *name)
{
	struct metarray *m;

	TAILQ_FOREACH(m, &p->metarrays, node)
		if (!strcmp(m->name, name))
			return &p->metarray_runtime[m->id];
	bsw_set_error("hand-written path: the pipeline has no meter array %s", name);
	return NULL;
}

static int
resolve(struct bsw_hand_path *h, struct rte_swx_pipeline *p)
{
	const struct struct_type *ms = p->metadata_st;
	struct action *term, *lns, *nh;

#define META(f, bits, name) \
	if (offset_of(ms, "the metadata", name, bits, &h->f)) \
		return -EINVAL
	META(in_port32, 32, "local_metadata_in_port");
	META(dst_mac48, 48, "local_metadata_dst_mac");
	META(src_mac48, 48, "local_metadata_src_mac");
	META(s_vid16, 16, "local_metadata_s_vid");
	META(c_vid16, 16, "local_metadata_c_vid");
	META(session_id16, 16, "local_metadata_session_id");
	META(src_ipv4_32, 32, "local_metadata_src_ipv4");
	META(local_ip32, 32, "local_metadata_local_ip");
	META(peer_ip32, 32, "local_metadata_peer_ip");
	META(tunnel_id16, 16, "local_metadata_tunnel_id");
	META(l2tp_session_id16, 16, "local_metadata_l2tp_session_id");
	META(lookup_ipv4_32, 32, "local_metadata_lookup_ipv4");
#undef META
	if (table_of(p, "bng_pppoe_up_v4", &h->t_pppoe_up_v4) || table_of(p, "bng_l2tp_up_v4", &h->t_l2tp_up_v4)
	    || table_of(p, "bng_my_station", &h->t_my_station) || table_of(p, "bng_fib_v4", &h->t_fib_v4))
		return -EINVAL;
	term = action_of(p, "bng_pppoe_term_0");
	lns = action_of(p, "bng_lns_term_0");
	nh = action_of(p, "bng_set_nexthop_l2_0");
	if (!term || !lns || !nh)
		return -EINVAL;
	h->a_pppoe_term = term->id;
	h->a_lns_term = lns->id;
	h->a_set_nexthop_l2 = nh->id;
	if (offset_of(term->st, term->name, "sess_idx", 32, &h->pppoe_sess32)
	    || offset_of(lns->st, lns->name, "sess_idx", 32, &h->lns_sess32)
	    || offset_of(nh->st, nh->name, "port", 32, &h->nh_port32)
	    || offset_of(nh->st, nh->name, "smac", 48, &h->nh_smac48)
	    || offset_of(nh->st, nh->name, "dmac", 48, &h->nh_dmac48)
	    || offset_of(nh->st, nh->name, "vid", 16, &h->nh_vid16))
		return -EINVAL;
	if (!(h->up_packets = regarray_of(p, "session_up_0_packets"))
	    || !(h->up_bytes = regarray_of(p, "session_up_0_bytes"))
	    || !(h->meter_up = metarray_of(p, "session_meter_up_0")))
		return -EINVAL;
	return 0;
}

/* ---- field access ----------------------------------------------------------- */

static __rte_always_inline uint16_t
be16(const uint8_t *b)
{
	return (uint16_t)(b[0] << 8 | b[1]);
}

static __rte_always_inline uint32_t
be32(const uint8_t *b)
{
	uint32_t v;

	memcpy(&v, b, 4);
	return rte_be_to_cpu_32(v);
}

static __rte_always_inline uint64_t
be48(const uint8_t *b)
{
	return (uint64_t)be16(b) << 32 | be32(b + 2);
}

/* Metadata and action-data fields (host byte order), each read or written
 * at its own width: not as a read-modify-write of 8 bytes, which would wait
 * for the store of the field before it to reach the cache. */
static __rte_always_inline void
put(uint8_t *s, uint32_t offset, uint64_t v, uint32_t bytes)
{
	memcpy(&s[offset], &v, bytes);
}

static __rte_always_inline uint64_t
get(const uint8_t *s, uint32_t offset, uint32_t bytes)
{
	uint64_t v = 0;

	memcpy(&v, &s[offset], bytes);
	return v;
}

static __rte_always_inline int
lookup(struct rte_swx_pipeline *p, uint32_t id, uint64_t *action_id, uint8_t **action_data)
{
	struct table_runtime *tr = &p->threads[0].tables[id];
	size_t entry_id;
	int hit;

	/* a staged lookup returns 0 until its last stage */
	while (!tr->func(p->table_state[id].obj, tr->mailbox, tr->key, action_id, action_data,
			 &entry_id, &hit))
		;
	return hit;
}

static __rte_always_inline uint32_t
ipv4_sum(const uint8_t *ip)
{
	uint32_t sum = 0;
	int i;

	for (i = 0; i < 20; i += 2)
		sum += be16(ip + i);
	sum = (sum & 0xffff) + (sum >> 16);
	return (sum & 0xffff) + (sum >> 16);
}

/* ---- the shared tail: route, TTL, meter, counters, rewrite, send ------------- */

/* ip: the IPv4 header to route (its checks done); sess: the session;
 * bytes: what its counters count (the PPP payload). 0: not this path. */
static __rte_always_inline int
route_up(struct bsw_hand_path *h, struct rte_swx_pipeline *p, struct rte_swx_pkt *pkt,
	 const uint8_t *frame_end, uint8_t *ip, uint64_t sess, uint32_t bytes)
{
	struct meter *m;
	uint64_t aid, port, dmac, smac;
	uint8_t *ad, *eth;
	uint32_t hc;
	int i;

	if (ipv4_sum(ip) != 0xffff)
		return 0;
	put(h->meta, h->lookup_ipv4_32, be32(ip + 16), 4);
	if (!lookup(p, h->t_fib_v4, &aid, &ad) || aid != h->a_set_nexthop_l2 || get(ad, h->nh_vid16, 2) != 0)
		return 0;
	port = get(ad, h->nh_port32, 4);
	if (ip[8] <= 1 || port >= p->n_ports_out)
		return 0;
	ip[8]--;
	hc = be16(ip + 10);
	hc = hc < 0xfeff ? hc + 0x100 : hc - 0xfeff;
	ip[10] = (uint8_t)(hc >> 8);
	ip[11] = (uint8_t)hc;

	/* the meter as the switch's meter instruction runs it */
	m = &h->meter_up->metarray[sess & h->meter_up->size_mask];
	if (bsw_meter_color(m, bytes, RTE_COLOR_GREEN) == RTE_COLOR_RED)
		return 0;
	h->up_packets->regarray[sess & h->up_packets->size_mask]++;
	h->up_bytes->regarray[sess & h->up_bytes->size_mask] += bytes;

	eth = ip - 14;
	dmac = get(ad, h->nh_dmac48, 6);
	smac = get(ad, h->nh_smac48, 6);
	for (i = 0; i < 6; i++) {
		eth[i] = (uint8_t)(dmac >> (40 - 8 * i));
		eth[6 + i] = (uint8_t)(smac >> (40 - 8 * i));
	}
	eth[12] = 0x08;
	eth[13] = 0x00;
	pkt->length = (uint32_t)(frame_end - eth);
	pkt->offset = (uint32_t)(eth - pkt->pkt);
	p->out[port].pkt_tx(p->out[port].obj, pkt);
	return 1;
}

/* ---- the two paths ------------------------------------------------------------ */

static __rte_always_inline int
pppoe_up(struct bsw_hand_path *h, struct rte_swx_pipeline *p, struct rte_swx_pkt *pkt,
	 uint8_t *d, uint32_t flen)
{
	uint8_t *pp = d + 14, *ip = pp + 8, *ad;
	uint32_t plen, tl;
	uint64_t aid;

	if (be16(d + 12) != 0x8864 || 14 + 8 + 20 > flen || be16(pp + 6) != 0x0021)
		return 0;
	if (ip[0] != 0x45 || (be16(ip + 6) & 0x1fff) || ip[9] == 6)	/* TCP: the MSS clamp's path */
		return 0;
	plen = be16(pp + 4);
	if (pp[0] != 0x11 || pp[1] || !be16(pp + 2) || plen < 2 || plen + 6 + 14 > flen)
		return 0;
	put(h->meta, h->in_port32, h->port, 4);
	put(h->meta, h->s_vid16, 0, 2);
	put(h->meta, h->c_vid16, 0, 2);
	put(h->meta, h->session_id16, be16(pp + 2), 2);
	put(h->meta, h->src_mac48, be48(d + 6), 6);
	put(h->meta, h->src_ipv4_32, be32(ip + 12), 4);
	if (!lookup(p, h->t_pppoe_up_v4, &aid, &ad) || aid != h->a_pppoe_term)
		return 0;
	tl = be16(ip + 2);
	if (tl + 2 != plen || tl < 20)
		return 0;
	return route_up(h, p, pkt, d + flen, ip, get(ad, h->pppoe_sess32, 4), plen - 2);
}

static __rte_always_inline int
lns_up(struct bsw_hand_path *h, struct rte_swx_pipeline *p, struct rte_swx_pkt *pkt,
       uint8_t *d, uint32_t flen)
{
	uint8_t *ip = d + 14, *udp = ip + 20, *l2tp = udp + 8, *pp = l2tp + 6, *in, *ad;
	uint32_t tl, ulen, ppp_len, itl;
	uint64_t aid;

	if (be16(d + 12) != 0x0800 || 14 + 20 + 8 + 6 + 2 + 20 > flen)
		return 0;
	put(h->meta, h->in_port32, h->port, 4);
	put(h->meta, h->dst_mac48, be48(d), 6);
	if (!lookup(p, h->t_my_station, &aid, &ad))
		return 0;
	tl = be16(ip + 2);
	if (ip[0] != 0x45 || (be16(ip + 6) & 0x1fff) || ip[9] != 17 || tl + 14 > flen || tl < 20
	    || be16(udp + 2) != 1701 || ipv4_sum(ip) != 0xffff)
		return 0;
	/* data (T clear), no Length, Sequence or Offset field, version 2 */
	if ((l2tp[0] & 0xca) || (l2tp[1] & 0x0f) != 2 || !be16(l2tp + 2) || !be16(l2tp + 4))
		return 0;
	if (be16(pp) == 0xff03)
		pp += 2;
	in = pp + 2;
	ulen = be16(udp + 4);
	if (be16(pp) != 0x0021 || ulen + 20 != tl || (uint32_t)(in - d) + 20 > flen)
		return 0;
	ppp_len = ulen - 8 - (uint32_t)(pp - l2tp);
	if (ppp_len < 2 || (uint32_t)(pp - d) + ppp_len > flen)
		return 0;
	itl = be16(in + 2);
	if (in[0] != 0x45 || (be16(in + 6) & 0x1fff) || in[9] == 6 || itl + 2 != ppp_len || itl < 20)
		return 0;
	put(h->meta, h->src_ipv4_32, be32(in + 12), 4);
	put(h->meta, h->local_ip32, be32(ip + 16), 4);
	put(h->meta, h->peer_ip32, be32(ip + 12), 4);
	put(h->meta, h->tunnel_id16, be16(l2tp + 2), 2);
	put(h->meta, h->l2tp_session_id16, be16(l2tp + 4), 2);
	if (!lookup(p, h->t_l2tp_up_v4, &aid, &ad) || aid != h->a_lns_term)
		return 0;
	return route_up(h, p, pkt, d + flen, in, get(ad, h->lns_sess32, 4), ppp_len - 2);
}

/* ---- worker and control -------------------------------------------------------- */

void
bsw_hand_path_run(struct bsw_worker *w)
{
	/* A copy on the stack: gcc then knows that the packet's stores do
	 * not change it, and keeps its offsets in registers. */
	struct bsw_hand_path copy = *w->hand_path, *h = &copy;
	struct rte_swx_pipeline *p = w->p;
	struct port_in_runtime *in = &p->in[h->port];
	struct port_out_runtime *drop = &p->out[p->n_ports_out - 1];	/* SWX's drop port */
	uint32_t n = 0, i, k;

	while (!__atomic_load_n(&w->stop, __ATOMIC_ACQUIRE)) {
		for (k = 0; k < BATCH; k++) {
			struct rte_swx_pkt pkt;
			uint8_t *d;
			uint32_t flen;
			int done;

			if (!in->pkt_rx(in->obj, &pkt))
				continue;
			d = pkt.pkt + pkt.offset;
			flen = pkt.length;
			if (h->prelude) {	/* bsw_frame_length.c: the length, then 0 */
				flen = be16(d);
				d += 4;
			}
			done = h->role == HAND_PPPOE_UP ? pppoe_up(h, p, &pkt, d, flen)
							: lns_up(h, p, &pkt, d, flen);
			if (!done)
				drop->pkt_tx(drop->obj, &pkt);
		}
		__atomic_fetch_add(&w->epoch, 1, __ATOMIC_SEQ_CST);
		if (++n % FLUSH_EVERY == 0)
			for (i = 0; i < p->n_ports_out; i++)
				if (p->out[i].flush)
					p->out[i].flush(p->out[i].obj);
	}
	for (i = 0; i < p->n_ports_out; i++)
		if (p->out[i].flush)
			p->out[i].flush(p->out[i].obj);
}

int
bsw_bench_hand_path_set(struct bsw_pipeline *bp, const char *role, uint32_t port)
{
	enum hand_role r = 0;
	uint32_t k;
	int status;

	if (bp->workers_started) {
		bsw_set_error("the hand-written path can be set only while no worker runs");
		return -EBUSY;
	}
	if (!strcmp(role, "pppoe_up"))
		r = HAND_PPPOE_UP;
	else if (!strcmp(role, "lns_up"))
		r = HAND_LNS_UP;
	else if (*role) {
		bsw_set_error("no hand-written path for %s (there are pppoe_up and lns_up)", role);
		return -EINVAL;
	}
	for (k = 0; k < bp->n_instances; k++) {
		struct rte_swx_pipeline *p = bp->inst[k].p;
		struct bsw_hand_path *h;

		free(bp->workers[k].hand_path);
		bp->workers[k].hand_path = NULL;
		if (!r)
			continue;
		if (port >= p->n_ports_in) {
			bsw_set_error("hand-written path: no input port %u", port);
			return -EINVAL;
		}
		h = calloc(1, sizeof(*h));
		if (!h)
			return -ENOMEM;
		status = resolve(h, p);
		if (status) {
			free(h);
			return status;
		}
		h->role = r;
		h->port = port;
		h->prelude = bp->inst[k].frame_length_ports != NULL;
		h->meta = p->threads[0].structs[p->metadata_struct_id];
		bp->workers[k].hand_path = h;
	}
	return 0;
}
