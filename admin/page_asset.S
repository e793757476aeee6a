/* page_asset.S: admin/page.html inside the binary, as the bytes between
 * admin_page_start and admin_page_end (admin.c serves them on GET /).
 *
 * .incbin reads the file at assembly time, relative to the directory the
 * compiler runs in (the repository root, like every other path in the
 * Makefile), so the page stays one ordinary HTML file in the tree and no
 * generated C array is needed. A NUL follows the page (not counted) so a
 * debugger can print it as a string.
 */
	.section .rodata
	.balign 16
	.globl admin_page_start
	.type admin_page_start, @object
admin_page_start:
	.incbin "admin/page.html"
	.globl admin_page_end
	.type admin_page_end, @object
admin_page_end:
	.byte 0
	.size admin_page_start, admin_page_end - admin_page_start
	.size admin_page_end, 1

/* No executable stack: this object must not make the linker ask for one. */
	.section .note.GNU-stack,"",@progbits
