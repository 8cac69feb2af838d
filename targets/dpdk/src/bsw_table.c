/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Table manager: our replacement for rte_swx_ctl's table update path.
 *
 * rte_swx_ctl keeps every entry in linked lists and scans them on each add,
 * so an add costs O(n) (about 300 us at 40k entries on DPDK 22.11), and each
 * commit sleeps 100 us. Here the P4Runtime server keeps the entries in a hash
 * map (it needs them for Read anyway) and only sends us checked operations;
 * we apply them to exact-match tables through the table type's own O(1)
 * add/del ops.
 *
 * Consistency under forwarding: every instance has two table state arrays.
 * The data plane reads the active one; a batch is applied to the standby one,
 * the two are swapped with rte_swx_pipeline_table_state_set(), we wait until
 * no packet can still hold the old array (a packet captures the array when
 * it is received), and then replay the batch on the old array so that both
 * are equal again. A packet therefore sees the tables before or after the
 * whole batch, never a half-written entry. Wildcard (LPM/ternary) tables have
 * no incremental ops in DPDK 22.11: they are rebuilt from the full entry list
 * into the standby array, as rte_swx_ctl does.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <rte_cycles.h>
#include <rte_pause.h>

#include "bsw_internal.h"
#include "rte_swx_pipeline_internal.h"

static int
table_params_init(struct rte_swx_pipeline *p, uint32_t table_id, struct bsw_table *t,
		  int index_tables, int line_em_tables, uint32_t n_actions)
{
	struct rte_swx_ctl_table_info ti;
	uint32_t first = UINT32_MAX, end = 0, n_exact = 0, i, max_data = 0;
	uint8_t *mask;
	int status;

	status = rte_swx_ctl_table_info_get(p, table_id, &ti);
	if (status)
		return status;
	status = rte_swx_ctl_table_ops_get(p, table_id, &t->ops, &t->is_stub);
	if (status)
		return status;
	snprintf(t->args, sizeof(t->args), "%s", ti.args);
	t->n_match_fields = ti.n_match_fields;

	for (i = 0; i < ti.n_match_fields; i++) {
		struct rte_swx_ctl_table_match_field_info mf;

		status = rte_swx_ctl_table_match_field_info_get(p, table_id, i, &mf);
		if (status)
			return status;
		if (mf.offset < first)
			first = mf.offset;
		if (mf.offset + mf.n_bits > end)
			end = mf.offset + mf.n_bits;
		if (mf.match_type == RTE_SWX_TABLE_MATCH_EXACT)
			n_exact++;
	}
	if (!ti.n_match_fields)
		first = end = 0;

	t->action_use = calloc(n_actions ? n_actions : 1, 1);
	if (!t->action_use)
		return -ENOMEM;
	t->n_actions = n_actions;
	for (i = 0; i < ti.n_actions; i++) {
		struct rte_swx_ctl_table_action_info ta;
		struct rte_swx_ctl_action_info ai;
		uint32_t j, size = 0;

		status = rte_swx_ctl_table_action_info_get(p, table_id, i, &ta);
		if (status)
			return status;
		status = rte_swx_ctl_action_info_get(p, ta.action_id, &ai);
		if (status)
			return status;
		if (ta.action_id >= n_actions)
			return -EINVAL;
		t->action_use[ta.action_id] =
			(ta.action_is_for_table_entries ? BSW_ACTION_FOR_ENTRIES : 0) |
			(ta.action_is_for_default_entry ? BSW_ACTION_FOR_DEFAULT : 0);
		for (j = 0; j < ai.n_args; j++) {
			struct rte_swx_ctl_action_arg_info arg;

			status = rte_swx_ctl_action_arg_info_get(p, ta.action_id, j, &arg);
			if (status)
				return status;
			size += arg.n_bits / 8;
		}
		if (size > max_data)
			max_data = size;
	}

	t->first_offset = first;
	t->is_exact = ti.n_match_fields && n_exact == ti.n_match_fields;
	if (!t->is_stub) {
		const struct rte_swx_table_ops *own = NULL;

		if (!t->is_exact && bsw_lpm32_eligible(p, table_id, ti.n_match_fields))
			own = &bsw_lpm32_table_ops;
		else if (index_tables && t->is_exact &&
			 bsw_index_eligible(p, table_id, ti.n_match_fields, ti.size))
			own = &bsw_index_table_ops;
		else if (line_em_tables && t->is_exact &&
			 bsw_line_em_eligible(p, table_id, ti.n_match_fields, ti.size,
					      (end - first) / 8, max_data))
			own = &bsw_line_em_table_ops;
		if (own) {
			t->is_own = 1;
			t->pipeline_ops = t->ops;
			t->ops = *own;
		}
	}
	t->action_data_size = max_data;
	t->params.match_type = t->is_exact ? RTE_SWX_TABLE_MATCH_EXACT :
					     RTE_SWX_TABLE_MATCH_WILDCARD;
	t->params.key_size = (end - first) / 8;
	t->params.key_offset = first / 8;
	t->params.action_data_size = max_data;
	t->params.hash_func = ti.hash_func;
	t->params.n_keys_max = ti.size;
	t->params.key_mask0 = NULL;

	if (t->params.key_size) {
		mask = calloc(1, t->params.key_size);
		if (!mask)
			return -ENOMEM;
		for (i = 0; i < ti.n_match_fields; i++) {
			struct rte_swx_ctl_table_match_field_info mf;

			rte_swx_ctl_table_match_field_info_get(p, table_id, i, &mf);
			memset(&mask[(mf.offset - first) / 8], 0xFF, mf.n_bits / 8);
		}
		t->params.key_mask0 = mask;
	}
	return 0;
}

/* A second state array for one instance: its own exact-match objects (they
 * are modified in place), shared wildcard/selector/learner objects (those are
 * replaced, never modified), its own default action data. */
static int
standby_create(struct bsw_pipeline *bp, struct bsw_instance *in)
{
	struct rte_swx_table_state *a = in->active, *s;
	uint32_t i;

	s = calloc(bp->n_states, sizeof(*s));
	if (!s)
		return -ENOMEM;
	memcpy(s, a, bp->n_states * sizeof(*s));
	in->standby = s;
	/* The copied pointers are the active array's: none may be left in the
	 * standby array when an allocation below fails, or standby_free would
	 * free the pipeline's own default action data (a double free when the
	 * pipeline is freed after it). */
	for (i = 0; i < bp->n_tables; i++)
		s[i].default_action_data = NULL;

	for (i = 0; i < bp->n_tables; i++) {
		struct bsw_table *t = &bp->tables[i];

		if (t->action_data_size) {
			s[i].default_action_data = malloc(t->action_data_size);
			if (!s[i].default_action_data)
				return -ENOMEM;
			memcpy(s[i].default_action_data, a[i].default_action_data,
			       t->action_data_size);
		}
		if (t->is_stub || !t->is_exact)
			continue;
		s[i].obj = t->ops.create(&t->params, NULL, t->args, (int)rte_socket_id());
		if (!s[i].obj) {
			bsw_set_error("table %u: cannot create the standby table object (out of EAL memory?)", i);
			return -ENOMEM;
		}
	}
	return 0;
}

static void
standby_free(struct bsw_pipeline *bp, struct bsw_instance *in)
{
	struct rte_swx_table_state *s = in->standby;
	uint32_t i;

	if (!s)
		return;
	for (i = 0; i < bp->n_tables; i++) {
		struct bsw_table *t = &bp->tables[i];

		free(s[i].default_action_data);
		if (!t->is_stub && t->is_exact && s[i].obj && s[i].obj != in->active[i].obj)
			t->ops.free(s[i].obj);
	}
	free(s);
	in->standby = NULL;
}

/* The switch's own table objects and lookups (is_own) in place of those the
 * pipeline built, in the instance's active array; before any packet runs. */
static int
own_tables_install(struct bsw_pipeline *bp, struct bsw_instance *in)
{
	uint32_t id, th;

	for (id = 0; id < bp->n_tables; id++) {
		struct bsw_table *t = &bp->tables[id];
		void *obj, *old = in->active[id].obj;

		if (!t->is_own)
			continue;
		obj = t->ops.create(&t->params, NULL, t->args, (int)rte_socket_id());
		if (!obj) {
			bsw_set_error("table %u: cannot create its table object (out of EAL memory?)", id);
			return -ENOMEM;
		}
		in->active[id].obj = obj;
		t->pipeline_ops.free(old);
		for (th = 0; th < RTE_SWX_PIPELINE_THREADS_MAX; th++)
			in->p->threads[th].tables[id].func = t->ops.lkp;
	}
	return 0;
}

/* Our objects out of the active array, where install put them (elsewhere
 * the object is the pipeline's type); with restore, an empty object of the
 * pipeline's type and its lookup in their place, else NULL (which every
 * type's free skips) before the pipeline frees its tables. A restore that
 * cannot create the replacement leaves that table as it was: -ENOMEM. */
static int
own_tables_uninstall(struct bsw_pipeline *bp, struct bsw_instance *in, int restore)
{
	uint32_t id, th;

	if (!in->active)
		return 0;
	for (id = 0; id < bp->n_tables; id++) {
		struct bsw_table *t = &bp->tables[id];
		void *empty = NULL;

		if (!t->is_own || in->p->threads[0].tables[id].func != t->ops.lkp)
			continue;
		if (restore) {
			empty = t->pipeline_ops.create(&t->params, NULL, t->args,
						       (int)rte_socket_id());
			if (!empty) {
				bsw_set_error("table %u: cannot create the pipeline's own table "
					      "object (out of EAL memory?)", id);
				return -ENOMEM;
			}
		}
		t->ops.free(in->active[id].obj);
		in->active[id].obj = empty;
		if (!restore)
			continue;
		for (th = 0; th < RTE_SWX_PIPELINE_THREADS_MAX; th++)
			in->p->threads[th].tables[id].func = t->pipeline_ops.lkp;
	}
	return 0;
}

int
bsw_tables_init(struct bsw_pipeline *bp)
{
	struct rte_swx_ctl_pipeline_info pi;
	struct rte_swx_pipeline *p0 = bp->inst[0].p;
	uint32_t i;
	int status;

	status = rte_swx_ctl_pipeline_info_get(p0, &pi);
	if (status)
		return status;
	bp->n_tables = pi.n_tables;
	bp->n_states = pi.n_tables + pi.n_selectors + pi.n_learners;
	bp->tables = calloc(pi.n_tables ? pi.n_tables : 1, sizeof(*bp->tables));
	if (!bp->tables)
		return -ENOMEM;
	for (i = 0; i < pi.n_tables; i++) {
		status = table_params_init(p0, i, &bp->tables[i], !bp->no_index_tables,
					   !bp->no_line_em_tables, pi.n_actions);
		if (status) {
			bsw_set_error("table %u: cannot read its parameters", i);
			return status;
		}
	}
	for (i = 0; i < bp->n_instances; i++) {
		struct bsw_instance *in = &bp->inst[i];

		status = rte_swx_pipeline_table_state_get(in->p, &in->active);
		if (status)
			return status;
		status = own_tables_install(bp, in);
		if (status)
			return status;
		status = standby_create(bp, in);
		if (status)
			return status;
	}
	return 0;
}

int
bsw_tables_release(struct bsw_pipeline *bp)
{
	uint32_t i, id;
	int status;

	/* rte_swx_ctl applies the pipeline's table types to the objects it
	 * finds: give it the pipeline's own (empty; it takes tables that the
	 * manager has not written to). The manager lets go either way; after
	 * a failure, tables still holding our objects are freed as ours. */
	bp->released = 1;
	for (i = 0; i < bp->n_instances; i++) {
		standby_free(bp, &bp->inst[i]);
		status = own_tables_uninstall(bp, &bp->inst[i], 1);
		if (status)
			return status;
	}
	for (id = 0; id < bp->n_tables; id++)
		if (bp->tables[id].is_own) {
			bp->tables[id].ops = bp->tables[id].pipeline_ops;
			bp->tables[id].is_own = 0;
		}
	return 0;
}

void
bsw_tables_free(struct bsw_pipeline *bp)
{
	uint32_t i;

	if (!bp->tables)
		return;
	for (i = 0; i < bp->n_instances; i++) {
		standby_free(bp, &bp->inst[i]);
		own_tables_uninstall(bp, &bp->inst[i], 0);
	}
	for (i = 0; i < bp->n_tables; i++) {
		free(bp->tables[i].params.key_mask0);
		free(bp->tables[i].action_use);
	}
	free(bp->tables);
	bp->tables = NULL;
}

static void
entry_fill(struct rte_swx_table_entry *e, const struct bsw_entry *in)
{
	memset(e, 0, sizeof(*e));
	e->key = (uint8_t *)(uintptr_t)in->key;
	e->key_mask = (uint8_t *)(uintptr_t)in->key_mask;
	e->key_priority = in->priority;
	e->action_id = in->action_id;
	e->action_data = (uint8_t *)(uintptr_t)in->action_data;
}

/* Build a new wildcard table object from a full entry list. */
static void *
wildcard_build(struct bsw_table *t, const struct bsw_op *op)
{
	struct rte_swx_table_entry_list list;
	struct rte_swx_table_entry *e;
	void *obj;
	uint32_t i;

	TAILQ_INIT(&list);
	e = calloc(op->n_entries ? op->n_entries : 1, sizeof(*e));
	if (!e)
		return NULL;
	for (i = 0; i < op->n_entries; i++) {
		entry_fill(&e[i], &op->entries[i]);
		TAILQ_INSERT_TAIL(&list, &e[i], node);
	}
	obj = t->ops.create(&t->params, &list, t->args, (int)rte_socket_id());
	free(e);
	return obj;
}

/* Apply one op to a state array. Wildcard rebuilds were prepared beforehand
 * (new_objs) because they are the only step that allocates. */
static int
op_apply(struct bsw_pipeline *bp, struct rte_swx_table_state *ts, const struct bsw_op *op,
	 void *new_obj)
{
	struct bsw_table *t = &bp->tables[op->table_id];
	struct rte_swx_table_entry e;

	switch (op->kind) {
	case BSW_OP_ADD:
		entry_fill(&e, &op->entry);
		return t->ops.add(ts[op->table_id].obj, &e);
	case BSW_OP_DEL:
		entry_fill(&e, &op->entry);
		return t->ops.del(ts[op->table_id].obj, &e);
	case BSW_OP_DEFAULT:
		ts[op->table_id].default_action_id = op->entry.action_id;
		if (t->action_data_size)
			memcpy(ts[op->table_id].default_action_data, op->entry.action_data,
			       t->action_data_size);
		return 0;
	case BSW_OP_REBUILD:
		ts[op->table_id].obj = new_obj;
		return 0;
	}
	return -EINVAL;
}

/* Undo op on a state array whose ops [0, n) were applied. */
static void
ops_undo(struct bsw_pipeline *bp, struct rte_swx_table_state *ts,
	 struct rte_swx_table_state *other, const struct bsw_op *ops, uint32_t n,
	 const uint64_t *saved_default_ids, uint8_t **saved_default_data)
{
	while (n--) {
		const struct bsw_op *op = &ops[n];
		struct bsw_table *t = &bp->tables[op->table_id];
		struct rte_swx_table_entry e;

		switch (op->kind) {
		case BSW_OP_ADD:
			if (op->undo.key) {
				entry_fill(&e, &op->undo);
				t->ops.add(ts[op->table_id].obj, &e);
			} else {
				entry_fill(&e, &op->entry);
				t->ops.del(ts[op->table_id].obj, &e);
			}
			break;
		case BSW_OP_DEL:
			entry_fill(&e, &op->undo);
			t->ops.add(ts[op->table_id].obj, &e);
			break;
		case BSW_OP_DEFAULT:
			ts[op->table_id].default_action_id = saved_default_ids[op->table_id];
			if (t->action_data_size)
				memcpy(ts[op->table_id].default_action_data,
				       saved_default_data[op->table_id], t->action_data_size);
			break;
		case BSW_OP_REBUILD:
			ts[op->table_id].obj = other[op->table_id].obj;
			break;
		}
	}
}

/* Whether an entry (use BSW_ACTION_FOR_ENTRIES) or the default entry
 * (BSW_ACTION_FOR_DEFAULT) of table t may run action action_id. */
static int
action_allowed(const struct bsw_table *t, uint32_t action_id, uint8_t use)
{
	return action_id < t->n_actions && (t->action_use[action_id] & use);
}

/* Whether every entry op writes (and every entry it may restore) runs an
 * action its table allows there. */
static int
op_actions_allowed(const struct bsw_table *t, const struct bsw_op *op)
{
	/* What an overwriting ADD or a DEL restores if the batch fails. */
	int undo_ok = !op->undo.key ||
		      action_allowed(t, op->undo.action_id, BSW_ACTION_FOR_ENTRIES);
	uint32_t k;

	switch (op->kind) {
	case BSW_OP_DEFAULT:
		return action_allowed(t, op->entry.action_id, BSW_ACTION_FOR_DEFAULT);
	case BSW_OP_ADD:
		return undo_ok && action_allowed(t, op->entry.action_id, BSW_ACTION_FOR_ENTRIES);
	case BSW_OP_DEL:
		return undo_ok;
	case BSW_OP_REBUILD:
		for (k = 0; k < op->n_entries; k++)
			if (!action_allowed(t, op->entries[k].action_id, BSW_ACTION_FOR_ENTRIES))
				return 0;
		return 1;
	default:
		return 0;
	}
}

static int
ops_check(struct bsw_pipeline *bp, const struct bsw_op *ops, uint32_t n_ops, uint32_t *n_done)
{
	uint8_t *rebuilt = calloc(bp->n_tables ? bp->n_tables : 1, 1);
	const char *why = "";
	uint32_t i;

	if (!rebuilt)
		return -ENOMEM;

	for (i = 0; i < n_ops; i++) {
		const struct bsw_op *op = &ops[i];
		struct bsw_table *t;

		if (op->table_id >= bp->n_tables || op->kind > BSW_OP_REBUILD)
			goto bad;
		t = &bp->tables[op->table_id];
		if ((op->kind == BSW_OP_ADD || op->kind == BSW_OP_DEL) &&
		    (t->is_stub || !t->is_exact || !op->entry.key))
			goto bad;
		if (op->kind == BSW_OP_DEL && !op->undo.key)
			goto bad;
		if (op->kind == BSW_OP_REBUILD) {
			/* One rebuild per table and batch: the replay frees the
			 * replaced object exactly once. */
			if (t->is_stub || t->is_exact || rebuilt[op->table_id])
				goto bad;
			rebuilt[op->table_id] = 1;
		}
		if (op->kind == BSW_OP_DEFAULT && t->action_data_size && !op->entry.action_data)
			goto bad;
		/* What the table copies must be there: the action data of an
		 * added entry, of the entry a DEL or an overwriting ADD may
		 * restore, and the keys and data of a rebuild's entries. */
		if (t->action_data_size &&
		    ((op->kind == BSW_OP_ADD && !op->entry.action_data) ||
		     ((op->kind == BSW_OP_ADD || op->kind == BSW_OP_DEL) && op->undo.key &&
		      !op->undo.action_data)))
			goto bad;
		if (!op_actions_allowed(t, op)) {
			why = ": an action id the table does not have there";
			goto bad;
		}
		if (op->kind == BSW_OP_REBUILD) {
			uint32_t k;

			for (k = 0; k < op->n_entries; k++)
				if ((t->params.key_size && !op->entries[k].key) ||
				    (t->action_data_size && !op->entries[k].action_data))
					goto bad;
		}
	}
	free(rebuilt);
	return 0;
bad:
	free(rebuilt);
	*n_done = i;
	bsw_set_error("operation %u is not valid for table %u%s", i, ops[i].table_id, why);
	return -EINVAL;
}

int
bsw_table_commit(struct bsw_pipeline *bp, const struct bsw_op *ops, uint32_t n_ops,
		 uint32_t *n_done)
{
	void **new_objs = NULL;
	uint64_t *saved_ids = NULL;
	uint8_t **saved_data = NULL;
	uint32_t i, k, n_applied[BSW_MAX_INSTANCES] = {0};
	int status = 0;

	*n_done = 0;
	if (!n_ops)
		return 0;
	if (bp->released) {
		bsw_set_error("tables are managed by rte_swx_ctl on this pipeline");
		return -EPERM;
	}
	status = ops_check(bp, ops, n_ops, n_done);
	if (status)
		return status;

	new_objs = calloc(n_ops * bp->n_instances, sizeof(void *));
	saved_ids = calloc(bp->n_tables, sizeof(uint64_t));
	saved_data = calloc(bp->n_tables, sizeof(uint8_t *));
	if (!new_objs || !saved_ids || !saved_data) {
		status = -ENOMEM;
		goto out;
	}

	/* Wildcard rebuilds: one new object per instance, built before anything
	 * is touched. */
	for (i = 0; i < n_ops; i++) {
		if (ops[i].kind != BSW_OP_REBUILD)
			continue;
		for (k = 0; k < bp->n_instances; k++) {
			bsw_set_error("%s", "");
			new_objs[i * bp->n_instances + k] =
				wildcard_build(&bp->tables[ops[i].table_id], &ops[i]);
			if (!new_objs[i * bp->n_instances + k]) {
				char why[256];

				/* A table type that says why (an LPM mask that is no
				 * prefix) refused the entries; one that does not ran
				 * out of memory (sizes were checked on unpacking). */
				snprintf(why, sizeof(why), "%s", bsw_last_error());
				if (why[0]) {
					bsw_set_error("table %u: rebuild with %u entries failed: %s",
						      ops[i].table_id, ops[i].n_entries, why);
					status = -EINVAL;
				} else {
					bsw_set_error("table %u: rebuild with %u entries failed (out "
						      "of EAL memory?)", ops[i].table_id,
						      ops[i].n_entries);
					status = -ENOMEM;
				}
				*n_done = i;
				goto free_new;	/* the objects built before this one */
			}
		}
	}

	/* Stage 1: every instance's standby array. */
	for (k = 0; k < bp->n_instances; k++) {
		struct bsw_instance *in = &bp->inst[k];

		if (k == 0)
			for (i = 0; i < bp->n_tables; i++) {
				saved_ids[i] = in->standby[i].default_action_id;
				if (!in->standby[i].default_action_data ||
				    !bp->tables[i].action_data_size)
					continue;
				/* the rollback copies it back: it must exist */
				saved_data[i] = malloc(bp->tables[i].action_data_size);
				if (!saved_data[i]) {
					bsw_set_error("out of memory saving the default actions");
					status = -ENOMEM;
					goto free_new;	/* nothing applied yet */
				}
				memcpy(saved_data[i], in->standby[i].default_action_data,
				       bp->tables[i].action_data_size);
			}
		for (i = 0; i < n_ops; i++) {
			status = op_apply(bp, in->standby, &ops[i],
					  new_objs[i * bp->n_instances + k]);
			if (status)
				break;
		}
		n_applied[k] = i;
		if (status) {
			bsw_set_error("table %u: operation %u failed: %s", ops[i].table_id, i,
				      status == -ENOSPC ? "table full" : strerror(-status));
			*n_done = i;
			goto rollback;
		}
	}

	/* Stage 2: swap, wait for packets holding the old arrays, replay. The
	 * standby's writes are ordered before the pointer that publishes it
	 * (a no-op on x86, a barrier where stores may pass stores). */
	__atomic_thread_fence(__ATOMIC_RELEASE);
	for (k = 0; k < bp->n_instances; k++)
		rte_swx_pipeline_table_state_set(bp->inst[k].p, bp->inst[k].standby);
	bsw_workers_quiesce(bp);
	for (k = 0; k < bp->n_instances; k++) {
		struct bsw_instance *in = &bp->inst[k];
		struct rte_swx_table_state *old = in->active;

		in->active = in->standby;
		in->standby = old;
		for (i = 0; i < n_ops; i++) {
			if (ops[i].kind == BSW_OP_REBUILD) {
				struct bsw_table *t = &bp->tables[ops[i].table_id];

				t->ops.free(old[ops[i].table_id].obj);
				old[ops[i].table_id].obj = in->active[ops[i].table_id].obj;
				continue;
			}
			/* Cannot fail: the same ops just succeeded on a table with
			 * the same content and capacity. */
			op_apply(bp, old, &ops[i], NULL);
		}
	}
	*n_done = n_ops;
	status = 0;
	goto out;

rollback:
	for (k = 0; k < bp->n_instances; k++)
		ops_undo(bp, bp->inst[k].standby, bp->inst[k].active, ops, n_applied[k],
			 saved_ids, saved_data);
free_new:
	for (i = 0; i < n_ops * bp->n_instances; i++)
		if (new_objs[i])
			bp->tables[ops[i / bp->n_instances].table_id].ops.free(new_objs[i]);
out:
	if (saved_data)
		for (i = 0; i < bp->n_tables; i++)
			free(saved_data[i]);
	free(saved_data);
	free(saved_ids);
	free(new_objs);
	return status;
}

/* A cursor over a packed batch (see bsw_table_commit_packed in bsw.h). Each
 * op header and each entry header is 12 bytes, which bounds what a buffer of
 * a given length can hold before anything is allocated. */
#define PACKED_HEADER_SIZE 12
struct packed_reader {
	const uint8_t *p;
	const uint8_t *end;
};

static int
packed_u32(struct packed_reader *r, uint32_t *v)
{
	if ((size_t)(r->end - r->p) < sizeof(*v))
		return -1;
	memcpy(v, r->p, sizeof(*v));
	r->p += sizeof(*v);
	return 0;
}

static int
packed_bytes(struct packed_reader *r, size_t n, const uint8_t **out)
{
	if ((size_t)(r->end - r->p) < n)
		return -1;
	*out = r->p;
	r->p += n;
	return 0;
}

static int
packed_entry(struct packed_reader *r, const struct bsw_table *t, struct bsw_entry *e)
{
	uint32_t flags;

	memset(e, 0, sizeof(*e));
	if (packed_u32(r, &flags) || packed_u32(r, &e->priority) || packed_u32(r, &e->action_id))
		return -1;
	if (flags & ~(BSW_PACKED_KEY | BSW_PACKED_MASK | BSW_PACKED_DATA))
		return -1;
	if ((flags & BSW_PACKED_KEY) && packed_bytes(r, t->params.key_size, &e->key))
		return -1;
	if ((flags & BSW_PACKED_MASK) && packed_bytes(r, t->params.key_size, &e->key_mask))
		return -1;
	if ((flags & BSW_PACKED_DATA) && packed_bytes(r, t->action_data_size, &e->action_data))
		return -1;
	return 0;
}

int
bsw_table_commit_packed(struct bsw_pipeline *bp, const uint8_t *buf, size_t len,
			uint32_t n_ops, uint32_t *n_done)
{
	struct packed_reader r = { buf, buf + len };
	struct bsw_op *ops;
	uint32_t i, k;
	int status;

	*n_done = 0;
	if (n_ops > len / PACKED_HEADER_SIZE) {
		bsw_set_error("packed batch: %u ops cannot fit in %zu bytes", n_ops, len);
		return -EINVAL;
	}
	ops = calloc(n_ops ? n_ops : 1, sizeof(*ops));
	if (!ops) {
		bsw_set_error("packed batch: no memory for %u ops", n_ops);
		return -ENOMEM;
	}
	for (i = 0; i < n_ops; i++) {
		struct bsw_op *op = &ops[i];
		const struct bsw_table *t;

		if (packed_u32(&r, &op->kind) || packed_u32(&r, &op->table_id) ||
		    packed_u32(&r, &op->n_entries) || op->table_id >= bp->n_tables)
			goto bad;
		t = &bp->tables[op->table_id];
		if (op->kind == BSW_OP_REBUILD) {
			struct bsw_entry *entries;

			if (op->n_entries > t->params.n_keys_max ||
			    op->n_entries > (size_t)(r.end - r.p) / PACKED_HEADER_SIZE)
				goto bad;
			entries = calloc(op->n_entries ? op->n_entries : 1, sizeof(*entries));
			if (!entries) {
				bsw_set_error("packed batch: no memory for %u rebuild entries",
					      op->n_entries);
				status = -ENOMEM;
				goto out;
			}
			op->entries = entries;
			for (k = 0; k < op->n_entries; k++)
				if (packed_entry(&r, t, &entries[k]))
					goto bad;
		} else if (op->n_entries || packed_entry(&r, t, &op->entry) ||
			   packed_entry(&r, t, &op->undo)) {
			goto bad;
		}
	}
	if (r.p != r.end) {
		bsw_set_error("packed batch: %zu bytes after its %u ops", (size_t)(r.end - r.p), n_ops);
		status = -EINVAL;
		goto out;
	}
	status = bsw_table_commit(bp, ops, n_ops, n_done);
	goto out;
bad:
	bsw_set_error("packed batch: op %u of %u is malformed or runs past the %zu bytes given",
		      i, n_ops, len);
	*n_done = i;
	status = -EINVAL;
out:
	for (k = 0; k < n_ops; k++)
		if (ops[k].kind == BSW_OP_REBUILD)
			free((void *)(uintptr_t)ops[k].entries);
	free(ops);
	return status;
}

int
bsw_table_entry_read(struct bsw_pipeline *bp, uint32_t table_id, const uint8_t *key,
		     uint64_t *action_id, uint8_t *action_data, uint64_t *index)
{
	struct bsw_table *t;
	uint8_t *buf, *kp, *ad = NULL;
	void *mailbox;
	uint64_t aid = 0, mailbox_size;
	size_t entry_id = 0;
	int hit = 0;

	if (table_id >= bp->n_tables || !key) {
		bsw_set_error("table %u: no such table", table_id);
		return -EINVAL;
	}
	t = &bp->tables[table_id];
	if (t->is_stub || !t->is_exact || bp->released) {
		bsw_set_error("table %u: entries are read by key in exact-match tables only", table_id);
		return -EINVAL;
	}

	/* The lookup reads the key at key_offset of the packet's key struct,
	 * and may read past the key's end: the array tables
	 * (bsw_table_index.c) read a 3-byte key as 4 bytes. Room for a 64-byte
	 * word beyond the offset covers any table type's read. */
	mailbox_size = t->ops.mailbox_size_get ? t->ops.mailbox_size_get() : 0;
	buf = calloc(1, t->params.key_offset + RTE_MAX(t->params.key_size, 64u));
	mailbox = calloc(1, mailbox_size ? mailbox_size : 1);
	if (!buf || !mailbox) {
		free(buf);
		free(mailbox);
		return -ENOMEM;
	}
	memcpy(&buf[t->params.key_offset], key, t->params.key_size);
	kp = buf;
	while (!t->ops.lkp(bp->inst[0].active[table_id].obj, mailbox, &kp, &aid, &ad, &entry_id, &hit))
		;
	free(buf);
	free(mailbox);
	if (!hit) {
		bsw_set_error("table %u: no entry with this key", table_id);
		return -ENOENT;
	}
	if (action_id)
		*action_id = aid;
	if (action_data && t->action_data_size)
		memcpy(action_data, ad, t->action_data_size);
	if (index)
		*index = 1 + (uint64_t)entry_id;
	return 0;
}

int
bsw_table_entry_index(struct bsw_pipeline *bp, uint32_t table_id, const uint8_t *key,
		      uint64_t *index)
{
	return bsw_table_entry_read(bp, table_id, key, NULL, NULL, index);
}

const char *
bsw_table_type(struct bsw_pipeline *bp, uint32_t table_id)
{
	const struct bsw_table *t;

	if (table_id >= bp->n_tables)
		return NULL;
	t = &bp->tables[table_id];
	if (t->is_stub)
		return "stub";
	if (t->ops.lkp == bsw_line_em_table_ops.lkp)
		return "line";
	if (t->ops.lkp == bsw_index_table_ops.lkp)
		return "index";
	if (t->ops.lkp == bsw_lpm32_table_ops.lkp)
		return "lpm32";
	return bsw_table_is_dpdk_em(t) ? "exact" : "dpdk";
}
