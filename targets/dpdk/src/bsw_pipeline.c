/* SPDX-License-Identifier: Apache-2.0 */
/* Pipeline build (codegen + gcc + build_from_lib), introspection, counters and
 * meters, port statistics. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <rte_lcore.h>
#include <rte_meter.h>

#include "bsw_internal.h"
#include "rte_swx_pipeline_internal.h"
#include "rte_swx_pipeline_spec.h"

/* FNV-1a over the spec text: the compiled library is cached under this name,
 * so reloading the same program skips gcc (seconds on a 2-core machine). */
static uint64_t
spec_hash(FILE *f)
{
	uint64_t h = 1469598103934665603ULL;
	int c;

	while ((c = fgetc(f)) != EOF)
		h = (h ^ (uint8_t)c) * 1099511628211ULL;
	rewind(f);
	return h;
}

/* The texts of the headers put in front of the generated code, and the
 * sources of the passes that copy it, linked in by bsw_codegen_headers.S. */
extern const char bsw_exact_access_h[];
extern const char bsw_group_chain_h[];
extern const char bsw_codegen_passes_src[];
extern const char bsw_emit_h[];
extern const char bsw_threads_h[];

static uint64_t
text_hash(uint64_t h, const char *s)
{
	for (; *s; s++)
		h = (h ^ (uint8_t)*s) * 1099511628211ULL;
	return h;
}

/* Whether the generated code gets the exact-width field accessors of
 * bsw_swx_exact_access.h: always, unless BSW_SWX_EXACT_ACCESS=0 asks for
 * DPDK's own (to measure the difference) or the build traces. */
static int
exact_access_wanted(int trace)
{
	const char *v = getenv("BSW_SWX_EXACT_ACCESS");

	return !trace && !(v && !strcmp(v, "0"));
}

/* Whether bsw_swx_exact_access.h's checksum instructions replace DPDK's:
 * with exact access, unless BSW_SWX_CHECKSUM=0 keeps DPDK's (fenced), to
 * measure the difference. */
static int
checksum_wanted(int exact)
{
	const char *v = getenv("BSW_SWX_CHECKSUM");

	return exact && !(v && !strcmp(v, "0"));
}

#define CHECKSUM_DEFINE "#define __instr_alu_ck"

/* bsw_swx_exact_access.h less its #defines of the checksum instructions
 * (so that DPDK's run, fenced like any other it does not replace); the
 * caller frees it. */
static char *
exact_header_dpdk_checksums(void)
{
	char *text = strdup(bsw_exact_access_h), *line;

	if (!text)
		return NULL;
	for (line = text; line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL)
		if (!strncmp(line, CHECKSUM_DEFINE, strlen(CHECKSUM_DEFINE)))
			while (*line && *line != '\n')
				*line++ = ' ';
	return text;
}

/* Whether the generated code gets the emits of bsw_swx_emit.h: always,
 * unless BSW_SWX_EMIT=0 asks for DPDK's (to measure the difference) or the
 * build traces. */
static int
emit_wanted(int trace)
{
	const char *v = getenv("BSW_SWX_EMIT");

	return !trace && !(v && !strcmp(v, "0"));
}

/* Whether a deparser's run of emits becomes one call (bsw_emit_run.c):
 * whenever the emits of bsw_swx_emit.h are used, unless BSW_SWX_EMIT_RUN=0
 * asks for one call per emit (to measure the difference). */
static int
emit_run_wanted(int emit)
{
	const char *v = getenv("BSW_SWX_EMIT_RUN");

	return emit && !(v && !strcmp(v, "0"));
}

#define EMIT_DPDK_HANDLER_DEFINE "#define BSW_EMIT_DPDK_HANDLER 1\n"

/* Whether tx and drop write the output headers with bsw_swx_emit.h's
 * handler: whenever its emits are used, unless BSW_SWX_EMIT_HANDLER=0 keeps
 * DPDK's (to measure the difference). */
static int
emit_handler_wanted(int emit)
{
	const char *v = getenv("BSW_SWX_EMIT_HANDLER");

	return emit && !(v && !strcmp(v, "0"));
}

/* Whether instruction groups call the next one (bsw_swx_group_chain.h):
 * always, unless BSW_SWX_GROUP_CHAIN=0 asks for DPDK's run loop between them
 * (to measure the difference) or the build traces (DPDK's trace is per
 * run-loop turn). */
static int
group_chain_wanted(int trace)
{
	const char *v = getenv("BSW_SWX_GROUP_CHAIN");

	return !trace && !(v && !strcmp(v, "0"));
}

/* Whether a hand-over to a group compiled here calls that group's function
 * directly (bsw_group_chain.c): whenever groups are chained, unless
 * BSW_SWX_DIRECT_CHAIN=0 keeps the call through the instruction table. */
static int
direct_chain_wanted(int chain)
{
	const char *v = getenv("BSW_SWX_DIRECT_CHAIN");

	return chain && !(v && !strcmp(v, "0"));
}

#define TABLE_STATS_DEFINE "#define BSW_TABLE_STATS 1\n"

/* Whether chained table lookups keep DPDK's per-table statistics
 * (bsw_swx_group_chain.h): only when BSW_TABLE_STATS=1 asks for them. */
static int
table_stats_wanted(void)
{
	const char *v = getenv("BSW_TABLE_STATS");

	return v && !strcmp(v, "1");
}

#define SPEC_BLANKS " \f\n\r\t\v"

/* One line's tokens as DPDK's spec parser splits them (blanks of any kind,
 * a comment ends the line), less an instruction's label ("L : ..."). */
static uint32_t
spec_line_tokens(char *line, char **tokens, uint32_t max)
{
	char *save = NULL, *tok;
	uint32_t n = 0;

	for (tok = strtok_r(line, SPEC_BLANKS, &save); tok && n < max;
	     tok = strtok_r(NULL, SPEC_BLANKS, &save)) {
		if (tok[0] == '#' || tok[0] == ';' || (tok[0] == '/' && tok[1] == '/'))
			break;
		tokens[n++] = tok;
	}
	if (n >= 2 && !strcmp(tokens[1], ":")) {
		memmove(tokens, tokens + 2, (n - 2) * sizeof(*tokens));
		n -= 2;
	}
	return n;
}

int
bsw_spec_has_line(const char *spec_path, const char *words)
{
	char *want_buf = strdup(words), *want[8], *got[8], *line = NULL;
	uint32_t n_want, n_got, i;
	size_t cap = 0;
	FILE *f;
	int found = 0;

	if (!want_buf)
		return -1;
	n_want = spec_line_tokens(want_buf, want, RTE_DIM(want));
	f = fopen(spec_path, "r");
	if (!f) {
		free(want_buf);
		return -1;
	}
	while (!found && getline(&line, &cap, f) >= 0) {
		n_got = spec_line_tokens(line, got, RTE_DIM(got));
		if (n_got < n_want)
			continue;
		for (i = 0; i < n_want && !strcmp(got[i], want[i]); i++)
			;
		found = n_want && i == n_want;
	}
	free(line);
	free(want_buf);
	fclose(f);
	return found;
}

/* Whether exact tables on one small id become arrays (bsw_table_index.c):
 * always, unless BSW_INDEX_TABLES=0 asks for DPDK's type (to measure the
 * difference) or the program has an entryid instruction (direct counters
 * and meters index their arrays by DPDK's entry numbering, 0..size-1,
 * which the arrays do not keep); a spec that cannot be read counts as one
 * that has. */
static int
index_tables_wanted(const char *spec_path)
{
	const char *v = getenv("BSW_INDEX_TABLES");

	return !(v && !strcmp(v, "0")) && bsw_spec_has_line(spec_path, "entryid ") == 0;
}

/* Whether large exact tables become line tables (bsw_table_line_em.c):
 * where the index tables are wanted (their entry ids are not DPDK's
 * either), unless BSW_LINE_EM_TABLES=0 asks for DPDK's type (to measure
 * the difference). */
static int
line_em_tables_wanted(void)
{
	const char *v = getenv("BSW_LINE_EM_TABLES");

	return !(v && !strcmp(v, "0"));
}

/* A copying pass over the generated code. */
typedef int (*code_pass_t)(FILE *in, FILE *out);

static int
fence_pass(FILE *in, FILE *out)
{
	uint32_t n_fenced;

	return bsw_exact_access_fence(bsw_exact_access_h, in, out, &n_fenced);
}

static int
fence_pass_dpdk_checksums(FILE *in, FILE *out)
{
	uint32_t n_fenced;
	char *header = exact_header_dpdk_checksums();
	int status;

	if (!header)
		return -1;
	status = bsw_exact_access_fence(header, in, out, &n_fenced);
	free(header);
	return status;
}

static int
emit_run_pass(FILE *in, FILE *out)
{
	uint32_t n_runs;

	return bsw_emit_run(in, out, &n_runs);
}

static int
chain_pass(FILE *in, FILE *out)
{
	uint32_t n_chained;

	return bsw_group_chain(in, out, &n_chained);
}

static int
direct_chain_pass(FILE *in, FILE *out)
{
	uint32_t n_chained;

	return bsw_group_chain_direct(in, out, &n_chained);
}

/* DPDK's codegen into memory, then through each pass in turn, the last one
 * writing to `code`. */
static int
codegen_passes(FILE *spec, FILE *code, const code_pass_t *passes, uint32_t n_passes,
	       uint32_t *err_line, const char **err_msg)
{
	char *text = NULL;
	size_t size = 0;
	uint32_t i;
	FILE *mem;
	int status;

	if (!n_passes)
		return rte_swx_pipeline_codegen(spec, code, err_line, err_msg);
	mem = open_memstream(&text, &size);
	if (!mem)
		return -ENOMEM;
	status = rte_swx_pipeline_codegen(spec, mem, err_line, err_msg);
	if (fclose(mem) && !status)
		status = -ENOMEM;
	for (i = 0; !status && i < n_passes; i++) {
		char *next = NULL;
		size_t next_size = 0;
		FILE *in = fmemopen(text, size, "r");
		FILE *out = i + 1 == n_passes ? code : open_memstream(&next, &next_size);

		if (!in || !out)
			status = -ENOMEM;
		else if (passes[i](in, out)) {
			*err_msg = "copying the generated code failed";
			status = -EIO;
		}
		if (in)
			fclose(in);
		if (out && out != code && fclose(out) && !status)
			status = -ENOMEM;
		free(text);
		text = next;
		size = next_size;
	}
	free(text);
	return status;
}

static int
file_exists(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && st.st_size > 0;
}

/* Longest work_dir or include_dir: room for "/pipeline-<16 hex>.log" in 512. */
#define BUILD_PATH_MAX 480

static int
codegen_and_compile(const char *spec_path, const char *work_dir, const char *include_dir,
		    char *lib_path, size_t lib_path_size, uint32_t *n_threads)
{
	char c_path[512], log_path[512], tmp_lib[600], cmd[4096], threads_dir[600] = "";
	char threads_inc[700] = "";
	const char *err_msg = NULL;
	uint32_t err_line = 0;
	FILE *spec, *code;
	uint64_t h;
	code_pass_t passes[3];
	uint32_t n_passes = 0;
	int status, trace, exact, checksum, emit, emit_run, chain, direct_chain, stats;
	int emit_handler;

	/* Both go into file names of fixed size and, single-quoted, into the
	 * shell command below: refuse what would be cut short (a truncated
	 * name once cached an empty library) or would end the quoting. */
	if (strlen(work_dir) > BUILD_PATH_MAX || strchr(work_dir, '\'') ||
	    strlen(include_dir) > BUILD_PATH_MAX || strchr(include_dir, '\'') ||
	    lib_path_size < sizeof(c_path)) {
		bsw_set_error("work_dir and the DPDK include dir must be at most %d characters "
			      "and hold no single quote", BUILD_PATH_MAX);
		return -ENAMETOOLONG;
	}
	spec = fopen(spec_path, "r");
	if (!spec) {
		bsw_set_error("cannot open spec %s: %s", spec_path, strerror(errno));
		return -errno;
	}
	h = spec_hash(spec);
	/* BSW_SWX_TRACE=1: build with DPDK's per-instruction trace (stdout), a
	 * debugging aid for P4 programs; cached under its own name. */
	trace = getenv("BSW_SWX_TRACE") && !strcmp(getenv("BSW_SWX_TRACE"), "1");
	if (trace)
		h ^= 0x7472616365ULL;
	exact = exact_access_wanted(trace);
	checksum = checksum_wanted(exact);
	emit = emit_wanted(trace);
	emit_run = emit_run_wanted(emit);
	emit_handler = emit_handler_wanted(emit);
	chain = group_chain_wanted(trace);
	stats = chain && table_stats_wanted();
	direct_chain = direct_chain_wanted(chain);
	if (exact)
		h = text_hash(h, bsw_exact_access_h);
	if (exact && !checksum)
		h = text_hash(h, "bsw_dpdk_checksums");
	if (emit)
		h = text_hash(h, bsw_emit_h);
	if (emit_run)
		h = text_hash(h, "bsw_emit_run");
	if (emit && !emit_handler)
		h = text_hash(h, EMIT_DPDK_HANDLER_DEFINE);
	if (chain)
		h = text_hash(h, bsw_group_chain_h);
	if (direct_chain)
		h = text_hash(h, "bsw_direct_chain");
	if (exact || emit_run || chain)
		h = text_hash(h, bsw_codegen_passes_src);
	if (stats)
		h = text_hash(h, TABLE_STATS_DEFINE);
	/* Fewer threads (bsw_thread_rotation.c): the generated code is compiled
	 * against a copy of DPDK's internal header made for it. */
	*n_threads = bsw_threads_wanted(spec_path, chain);
	if (*n_threads < RTE_SWX_PIPELINE_THREADS_MAX) {
		snprintf(threads_dir, sizeof(threads_dir), "%s/swx-threads-%u", work_dir, *n_threads);
		if (bsw_threads_header(include_dir, threads_dir, *n_threads)) {
			fprintf(stderr, "bsw: %s: rotating over all %d threads\n", bsw_last_error(),
				RTE_SWX_PIPELINE_THREADS_MAX);
			*n_threads = RTE_SWX_PIPELINE_THREADS_MAX;
		} else {
			char tag[32];

			snprintf(tag, sizeof(tag), "threads=%u", *n_threads);
			h = text_hash(text_hash(h, tag), bsw_threads_h);
			snprintf(threads_inc, sizeof(threads_inc), "-I '%s'", threads_dir);
		}
	}
	snprintf(lib_path, lib_path_size, "%s/pipeline-%016llx.so", work_dir,
		 (unsigned long long)h);
	if (file_exists(lib_path)) {
		fclose(spec);
		return 0;
	}

	snprintf(c_path, sizeof(c_path), "%s/pipeline-%016llx.c", work_dir, (unsigned long long)h);
	code = fopen(c_path, "w");
	if (!code) {
		fclose(spec);
		bsw_set_error("cannot write %s: %s", c_path, strerror(errno));
		return -errno;
	}
	if (exact) {
		char *header = checksum ? NULL : exact_header_dpdk_checksums();

		if (!checksum && !header) {
			fclose(spec);
			fclose(code);
			bsw_set_error("out of memory");
			return -ENOMEM;
		}
		fprintf(code, "%s\n", checksum ? bsw_exact_access_h : header);
		free(header);
		passes[n_passes++] = checksum ? fence_pass : fence_pass_dpdk_checksums;
	}
	if (emit && !emit_handler)
		fputs(EMIT_DPDK_HANDLER_DEFINE, code);
	if (emit)
		fprintf(code, "%s\n", bsw_emit_h);
	if (emit_run)
		passes[n_passes++] = emit_run_pass;
	if (chain) {
		if (stats)
			fputs(TABLE_STATS_DEFINE, code);
		fprintf(code, "%s\n", bsw_group_chain_h);
		passes[n_passes++] = direct_chain ? direct_chain_pass : chain_pass;
		if (*n_threads < RTE_SWX_PIPELINE_THREADS_MAX)
			fprintf(code, "%s\n", bsw_threads_h);
	}
	status = codegen_passes(spec, code, passes, n_passes, &err_line, &err_msg);
	fclose(spec);
	if (fclose(code) && !status) {
		bsw_set_error("cannot write %s: %s", c_path, strerror(errno));
		return -errno;
	}
	if (status) {
		bsw_set_error("spec %s line %u: %s", spec_path, err_line,
			      err_msg ? err_msg : "codegen failed");
		return status;
	}

	/* Build to a temporary name and rename, so that a crash or a concurrent
	 * build never leaves a half-written library under the cached name. */
	snprintf(log_path, sizeof(log_path), "%s/pipeline-%016llx.log", work_dir,
		 (unsigned long long)h);
	snprintf(tmp_lib, sizeof(tmp_lib), "%s.%d.tmp", lib_path, (int)getpid());
	snprintf(cmd, sizeof(cmd),
		 "gcc -O3 -fPIC -shared -Wno-deprecated-declarations %s "
		 "$(pkg-config --cflags libdpdk) %s -I '%s' -o '%s' '%s' > '%s' 2>&1",
		 trace ? "-DTRACE_LEVEL=1" : "", threads_inc, include_dir, tmp_lib, c_path, log_path);
	status = system(cmd);
	if (status == -1 || !WIFEXITED(status) || WEXITSTATUS(status)) {
		bsw_set_error("gcc failed on the generated pipeline code, see %s", log_path);
		unlink(tmp_lib);
		return -EIO;
	}
	if (rename(tmp_lib, lib_path)) {
		bsw_set_error("rename %s: %s", tmp_lib, strerror(errno));
		return -errno;
	}
	return 0;
}

/* The interpreted route: DPDK's own spec parser and configuration. */
static int
build_interpreted(const char *name, const char *spec_path, const char *iospec_text,
		  struct rte_swx_pipeline **p)
{
	struct pipeline_spec *s = NULL;
	struct pipeline_iospec *sio = NULL;
	const char *err_msg = NULL;
	uint32_t err_line = 0;
	FILE *f;
	int status;

	f = fopen(spec_path, "r");
	if (!f) {
		bsw_set_error("cannot open spec %s: %s", spec_path, strerror(errno));
		return -errno;
	}
	s = pipeline_spec_parse(f, &err_line, &err_msg);
	fclose(f);
	if (!s) {
		bsw_set_error("spec %s line %u: %s", spec_path, err_line,
			      err_msg ? err_msg : "parse error");
		return -EINVAL;
	}
	f = fmemopen((void *)iospec_text, strlen(iospec_text), "r");
	if (!f) {
		status = -errno;
		goto out;
	}
	sio = pipeline_iospec_parse(f, &err_line, &err_msg);
	fclose(f);
	if (!sio) {
		bsw_set_error("I/O spec line %u: %s", err_line, err_msg ? err_msg : "parse error");
		status = -EINVAL;
		goto out;
	}
	status = rte_swx_pipeline_config(p, name, (int)rte_socket_id());
	if (!status)
		status = pipeline_iospec_configure(*p, sio, &err_msg);
	if (!status)
		status = pipeline_spec_configure(*p, s, &err_msg);
	if (!status)
		status = rte_swx_pipeline_build(*p);
	if (status) {
		bsw_set_error("interpreted pipeline build: %s (%s)", err_msg ? err_msg : "failed",
			      strerror(-status));
		rte_swx_pipeline_free(*p);
		*p = NULL;
	}
out:
	pipeline_iospec_free(sio);
	pipeline_spec_free(s);
	return status;
}

int
bsw_spec_check(const char *spec_path)
{
	const char *err_msg = NULL;
	uint32_t err_line = 0;
	FILE *spec, *sink;
	int status;

	spec = fopen(spec_path, "r");
	if (!spec) {
		bsw_set_error("cannot open spec %s: %s", spec_path, strerror(errno));
		return -errno;
	}
	sink = fopen("/dev/null", "w");
	if (!sink) {
		fclose(spec);
		bsw_set_error("cannot open /dev/null: %s", strerror(errno));
		return -errno;
	}
	status = rte_swx_pipeline_codegen(spec, sink, &err_line, &err_msg);
	fclose(spec);
	fclose(sink);
	if (status)
		bsw_set_error("spec line %u: %s", err_line, err_msg ? err_msg : "not a valid SWX pipeline");
	return status;
}

int
bsw_pipeline_build(const char *spec_path, const char *work_dir, const char *include_dir,
		   uint32_t mode, uint32_t n_instances, const char **iospec_texts,
		   struct bsw_pipeline **out, uint32_t *used_mode)
{
	struct bsw_pipeline *bp;
	char lib_path[512];
	uint32_t i, n_threads = RTE_SWX_PIPELINE_THREADS_MAX;
	int status, frame_length;

	if (!n_instances || n_instances > BSW_MAX_INSTANCES) {
		bsw_set_error("instances must be 1..%d", BSW_MAX_INSTANCES);
		return -EINVAL;
	}
	*used_mode = BSW_BUILD_INTERPRETED;
	if (mode != BSW_BUILD_INTERPRETED) {
		status = codegen_and_compile(spec_path, work_dir, include_dir, lib_path,
					     sizeof(lib_path), &n_threads);
		if (!status)
			*used_mode = BSW_BUILD_COMPILED;
		else if (mode == BSW_BUILD_COMPILED_ONLY)
			return status;
		else
			fprintf(stderr, "bsw: compiled pipeline unavailable (%s): interpreted\n",
				bsw_last_error());
	}

	frame_length = bsw_spec_wants_frame_length(spec_path);
	bp = calloc(1, sizeof(*bp));
	if (!bp)
		return -ENOMEM;
	bp->no_index_tables = !index_tables_wanted(spec_path);
	bp->no_line_em_tables = bp->no_index_tables || !line_em_tables_wanted();
	bp->n_threads = *used_mode == BSW_BUILD_COMPILED ? n_threads : RTE_SWX_PIPELINE_THREADS_MAX;
	bp->n_instances = n_instances;
	rte_spinlock_init(&bp->cpu_in_lock);
	rte_spinlock_init(&bp->cpu_out_lock);

	for (i = 0; i < n_instances; i++) {
		static uint32_t generation;
		char name[64];
		FILE *io;

		io = fmemopen((void *)iospec_texts[i], strlen(iospec_texts[i]), "r");
		if (!io) {
			status = -errno;
			goto error;
		}
		/* Pipeline names are process-global in DPDK: a reload gets new ones. */
		snprintf(name, sizeof(name), "bsw%u_%u", generation++, i);
		if (*used_mode == BSW_BUILD_COMPILED) {
			status = rte_swx_pipeline_build_from_lib(&bp->inst[i].p, name, lib_path,
								 io, (int)rte_socket_id());
		} else {
			status = build_interpreted(name, spec_path, iospec_texts[i],
						   &bp->inst[i].p);
		}
		fclose(io);
		if (status && *used_mode == BSW_BUILD_INTERPRETED)
			goto error;	/* message already set */
		if (status) {
			bsw_set_error("instance %u: pipeline build from %s failed (%s); check the "
				      "I/O spec ports, the EAL memory left and that the library "
				      "matches this DPDK",
				      i, lib_path, strerror(-status));
			goto error;
		}
		if (*used_mode == BSW_BUILD_COMPILED && n_threads < RTE_SWX_PIPELINE_THREADS_MAX) {
			status = bsw_threads_install(bp->inst[i].p);
			if (status)
				goto error;
		}
		bp->workers[i].p = bp->inst[i].p;
		if (frame_length) {
			status = bsw_frame_length_enable(&bp->inst[i]);
			if (status)
				goto error;
		}
		status = bsw_rx_backoff_enable(&bp->inst[i]);
		if (status)
			goto error;
		bp->workers[i].rx_backoff = bp->inst[i].rx_backoff;
		bp->workers[i].frame_rx = bp->inst[i].frame_length_ports;
	}

	status = bsw_tables_init(bp);
	if (status)
		goto error;

	*out = bp;
	return 0;

error:
	bsw_pipeline_free(bp);
	return status;
}

void
bsw_pipeline_free(struct bsw_pipeline *bp)
{
	uint32_t i;

	if (!bp)
		return;
	bsw_packet_channel_stop(bp);
	bsw_workers_stop(bp);
	bsw_tables_free(bp);
	for (i = 0; i < bp->n_instances; i++) {
		if (bp->inst[i].p) {
			uint32_t n_left = bsw_port_readers_release(bp->inst[i].p);

			if (n_left)
				fprintf(stderr, "bsw: %u input port(s) not of the DPDK 22.11 layout "
					"bsw_port_reader_free.c knows: DPDK frees their last burst "
					"as it is\n", n_left);
			rte_swx_pipeline_free(bp->inst[i].p);
		}
		free(bp->inst[i].frame_length_ports);
		free(bp->inst[i].rx_backoff);
		free(bp->workers[i].hand_path);
	}
	free(bp);
}

/* ---- introspection ---- */

#define P0(bp) ((bp)->inst[0].p)

int
bsw_pipeline_info(struct bsw_pipeline *bp, struct bsw_pipeline_info *info)
{
	struct rte_swx_ctl_pipeline_info pi;
	int status = rte_swx_ctl_pipeline_info_get(P0(bp), &pi);

	if (status)
		return status;
	info->n_ports_in = pi.n_ports_in;
	info->n_ports_out = pi.n_ports_out;
	info->n_actions = pi.n_actions;
	info->n_tables = pi.n_tables;
	info->n_regarrays = pi.n_regarrays;
	info->n_metarrays = pi.n_metarrays;
	return 0;
}

int
bsw_table_info(struct bsw_pipeline *bp, uint32_t table_id, struct bsw_table_info *info)
{
	struct rte_swx_ctl_table_info ti;
	int status;

	if (table_id >= bp->n_tables)
		return -EINVAL;
	status = rte_swx_ctl_table_info_get(P0(bp), table_id, &ti);
	if (status)
		return status;
	snprintf(info->name, sizeof(info->name), "%s", ti.name);
	info->n_match_fields = ti.n_match_fields;
	info->n_actions = ti.n_actions;
	info->size = ti.size;
	info->is_exact = bp->tables[table_id].is_exact;
	info->key_size = bp->tables[table_id].params.key_size;
	info->action_data_size = bp->tables[table_id].action_data_size;
	info->default_action_is_const = ti.default_action_is_const;
	return 0;
}

int
bsw_match_field_info(struct bsw_pipeline *bp, uint32_t table_id, uint32_t field_id,
		     struct bsw_match_field_info *info)
{
	struct rte_swx_ctl_table_match_field_info mf;
	int status;

	if (table_id >= bp->n_tables)
		return -EINVAL;
	status = rte_swx_ctl_table_match_field_info_get(P0(bp), table_id, field_id, &mf);
	if (status)
		return status;
	info->match_type = mf.match_type;
	info->is_header = mf.is_header;
	info->n_bits = mf.n_bits;
	info->byte_offset = (mf.offset - bp->tables[table_id].first_offset) / 8;
	return 0;
}

int
bsw_table_action_info(struct bsw_pipeline *bp, uint32_t table_id, uint32_t i,
		      struct bsw_table_action_info *info)
{
	struct rte_swx_ctl_table_action_info ta;
	int status = rte_swx_ctl_table_action_info_get(P0(bp), table_id, i, &ta);

	if (status)
		return status;
	info->action_id = ta.action_id;
	info->for_entries = ta.action_is_for_table_entries;
	info->for_default = ta.action_is_for_default_entry;
	return 0;
}

int
bsw_action_info(struct bsw_pipeline *bp, uint32_t action_id, struct bsw_action_info *info)
{
	struct rte_swx_ctl_action_info ai;
	int status = rte_swx_ctl_action_info_get(P0(bp), action_id, &ai);

	if (status)
		return status;
	snprintf(info->name, sizeof(info->name), "%s", ai.name);
	info->n_args = ai.n_args;
	return 0;
}

int
bsw_action_arg_info(struct bsw_pipeline *bp, uint32_t action_id, uint32_t arg_id,
		    struct bsw_action_arg_info *info)
{
	struct rte_swx_ctl_action_arg_info ai;
	int status = rte_swx_ctl_action_arg_info_get(P0(bp), action_id, arg_id, &ai);

	if (status)
		return status;
	snprintf(info->name, sizeof(info->name), "%s", ai.name);
	info->n_bits = ai.n_bits;
	info->is_network_byte_order = ai.is_network_byte_order;
	return 0;
}

int
bsw_regarray_info(struct bsw_pipeline *bp, uint32_t id, struct bsw_array_info *info)
{
	struct rte_swx_ctl_regarray_info ri;
	int status = rte_swx_ctl_regarray_info_get(P0(bp), id, &ri);

	if (status)
		return status;
	snprintf(info->name, sizeof(info->name), "%s", ri.name);
	info->size = ri.size;
	return 0;
}

int
bsw_metarray_info(struct bsw_pipeline *bp, uint32_t id, struct bsw_array_info *info)
{
	struct rte_swx_ctl_metarray_info mi;
	int status = rte_swx_ctl_metarray_info_get(P0(bp), id, &mi);

	if (status)
		return status;
	snprintf(info->name, sizeof(info->name), "%s", mi.name);
	info->size = mi.size;
	return 0;
}

/* ---- counters and meters ---- */

int
bsw_regarray_read(struct bsw_pipeline *bp, const char *name, uint32_t index, uint64_t *value)
{
	uint64_t sum = 0, v;
	uint32_t i;
	int status;

	for (i = 0; i < bp->n_instances; i++) {
		status = rte_swx_ctl_pipeline_regarray_read(bp->inst[i].p, name, index, &v);
		if (status)
			return status;
		sum += v;
	}
	*value = sum;
	return 0;
}

int
bsw_regarray_write(struct bsw_pipeline *bp, const char *name, uint32_t index, uint64_t value)
{
	uint32_t i;
	int status;

	/* A counter reset writes 0 everywhere; a register value lives in instance 0
	 * and the others are cleared so that a summed read returns it. */
	for (i = 0; i < bp->n_instances; i++) {
		status = rte_swx_ctl_pipeline_regarray_write(bp->inst[i].p, name, index,
							     i == 0 ? value : 0);
		if (status)
			return status;
	}
	return 0;
}

/* Meter profiles are named by their parameters, so equal configurations share
 * one profile; DPDK keeps a reference count per profile. The name holds all
 * 256 bits, 6 to a character: in hex they can need 69 characters, and a
 * name cut to DPDK's 63 gave two configurations one profile (the second
 * meter silently got the first's parameters). */
void
bsw_meter_profile_name(char name[BSW_METER_PROFILE_NAME_SIZE], uint64_t cir, uint64_t pir,
		       uint64_t cbs, uint64_t pbs)
{
	static const char digits[] =
		"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz+-";
	const uint64_t v[4] = {cir, pir, cbs, pbs};
	uint32_t bit, n = 0;

	name[n++] = 'p';
	for (bit = 0; bit < 256; bit += 6) {
		uint32_t w = bit / 64, o = bit % 64;
		uint64_t x = v[w] >> o;

		if (o > 58 && w < 3)
			x |= v[w + 1] << (64 - o);
		name[n++] = digits[x & 63];
	}
	name[n] = '\0';
}

int
bsw_meter_set(struct bsw_pipeline *bp, const char *metarray, uint32_t index, uint64_t cir,
	      uint64_t pir, uint64_t cbs, uint64_t pbs)
{
	struct rte_meter_trtcm_params params = {
		.cir = cir, .pir = pir, .cbs = cbs, .pbs = pbs,
	};
	char profile[BSW_METER_PROFILE_NAME_SIZE];
	uint32_t i;
	int status;

	RTE_BUILD_BUG_ON(BSW_METER_PROFILE_NAME_SIZE > RTE_SWX_NAME_SIZE);
	bsw_meter_profile_name(profile, cir, pir, cbs, pbs);
	for (i = 0; i < bp->n_instances; i++) {
		status = rte_swx_ctl_meter_profile_add(bp->inst[i].p, profile, &params);
		if (status && status != -EEXIST) {
			bsw_set_error("meter profile %s: %s", profile, strerror(-status));
			return status;
		}
		status = rte_swx_ctl_meter_set(bp->inst[i].p, metarray, index, profile);
		if (status) {
			bsw_set_error("meter %s[%u]: %s", metarray, index, strerror(-status));
			return status;
		}
	}
	return 0;
}

int
bsw_meter_reset(struct bsw_pipeline *bp, const char *metarray, uint32_t index)
{
	uint32_t i;
	int status;

	for (i = 0; i < bp->n_instances; i++) {
		status = rte_swx_ctl_meter_reset(bp->inst[i].p, metarray, index);
		if (status)
			return status;
	}
	return 0;
}

int
bsw_meter_stats_read(struct bsw_pipeline *bp, const char *metarray, uint32_t index,
		     uint64_t n_pkts[3], uint64_t n_bytes[3])
{
	struct rte_swx_ctl_meter_stats stats;
	uint32_t i, c;
	int status;

	RTE_BUILD_BUG_ON(RTE_COLORS != 3);
	for (c = 0; c < RTE_COLORS; c++)
		n_pkts[c] = n_bytes[c] = 0;
	for (i = 0; i < bp->n_instances; i++) {
		status = rte_swx_ctl_meter_stats_read(bp->inst[i].p, metarray, index, &stats);
		if (status) {
			bsw_set_error("meter %s[%u] statistics: %s", metarray, index, strerror(-status));
			return status;
		}
		for (c = 0; c < RTE_COLORS; c++) {
			n_pkts[c] += stats.n_pkts[c];
			n_bytes[c] += stats.n_bytes[c];
		}
	}
	return 0;
}

/* ---- ports ---- */

int
bsw_port_stats(struct bsw_pipeline *bp, uint32_t port_id, uint64_t *rx_pkts,
	       uint64_t *rx_bytes, uint64_t *tx_pkts, uint64_t *tx_bytes, uint64_t *tx_drops)
{
	struct rte_swx_ctl_pipeline_info pi;
	uint32_t i;

	*rx_pkts = *rx_bytes = *tx_pkts = *tx_bytes = *tx_drops = 0;
	if (rte_swx_ctl_pipeline_info_get(P0(bp), &pi))
		return -EINVAL;
	for (i = 0; i < bp->n_instances; i++) {
		struct rte_swx_port_in_stats in;
		struct rte_swx_port_out_stats out;

		memset(&in, 0, sizeof(in));
		memset(&out, 0, sizeof(out));
		if (port_id < pi.n_ports_in &&
		    !rte_swx_ctl_pipeline_port_in_stats_read(bp->inst[i].p, port_id, &in)) {
			*rx_pkts += in.n_pkts;
			*rx_bytes += in.n_bytes;
		}
		if (port_id < pi.n_ports_out &&
		    !rte_swx_ctl_pipeline_port_out_stats_read(bp->inst[i].p, port_id, &out)) {
			*tx_pkts += out.n_pkts;
			*tx_bytes += out.n_bytes;
			*tx_drops += out.n_pkts_drop;
		}
	}
	return 0;
}
