/* The texts of bsw_swx_exact_access.h, bsw_swx_emit.h, bsw_swx_group_chain.h
 * and bsw_swx_threads.h, NUL-terminated, for the pipeline build to put in
 * front of the code it generates (bsw_pipeline.c); and the sources of the
 * passes that copy that code, which the build hashes into the name of the
 * library it caches, so that a changed pass never reuses an old one. */
	.section .rodata
	.global bsw_exact_access_h
	.type bsw_exact_access_h, @object
bsw_exact_access_h:
	.incbin "bsw_swx_exact_access.h"
	.byte 0
	.size bsw_exact_access_h, . - bsw_exact_access_h
	.global bsw_emit_h
	.type bsw_emit_h, @object
bsw_emit_h:
	.incbin "bsw_swx_emit.h"
	.byte 0
	.size bsw_emit_h, . - bsw_emit_h
	.global bsw_group_chain_h
	.type bsw_group_chain_h, @object
bsw_group_chain_h:
	.incbin "bsw_swx_group_chain.h"
	.byte 0
	.size bsw_group_chain_h, . - bsw_group_chain_h
	.global bsw_threads_h
	.type bsw_threads_h, @object
bsw_threads_h:
	.incbin "bsw_swx_threads.h"
	.byte 0
	.size bsw_threads_h, . - bsw_threads_h
	.global bsw_codegen_passes_src
	.type bsw_codegen_passes_src, @object
bsw_codegen_passes_src:
	.incbin "bsw_exact_access_fence.c"
	.incbin "bsw_emit_run.c"
	.incbin "bsw_group_chain.c"
	.byte 0
	.size bsw_codegen_passes_src, . - bsw_codegen_passes_src
	.section .note.GNU-stack, "", @progbits
