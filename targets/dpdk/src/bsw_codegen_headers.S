/* The texts of bsw_swx_exact_access.h, bsw_swx_emit.h, bsw_swx_group_chain.h
 * and bsw_swx_threads.h, NUL-terminated, for the pipeline build to put in
 * front of the code it generates (bsw_pipeline.c). */
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
	.section .note.GNU-stack, "", @progbits
