/* replay_preset.S: conf/policy-read-only.json inside the binary, as the
 * bytes between replay_preset_start and replay_preset_end: the policy
 * `mcpwarden replay` judges calls by unless --policy names another. The
 * shipped file itself (like admin/page_asset.S), so the default and the
 * documented preset cannot drift apart. A NUL follows (not counted).
 */
	.section .rodata
	.balign 16
	.globl replay_preset_start
	.type replay_preset_start, @object
replay_preset_start:
	.incbin "conf/policy-read-only.json"
	.globl replay_preset_end
	.type replay_preset_end, @object
replay_preset_end:
	.byte 0
	.size replay_preset_start, replay_preset_end - replay_preset_start
	.size replay_preset_end, 1

/* No executable stack: this object must not make the linker ask for one. */
	.section .note.GNU-stack,"",@progbits
