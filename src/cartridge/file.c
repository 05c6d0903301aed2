/*
 * file.c - a cartridge's file read whole, and the message of a cartridge
 * that cannot be loaded (its path first): what loading a JSON cartridge
 * (load.c) and a shared object (shared.c) share.
 */
#include "parts.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "event/json_write.h"

int keel_cartridge_load_fail(char **errmsg, const char *path, const char *fmt, ...)
{
	if (errmsg) {
		struct keel_buf b;
		keel_buf_init(&b);
		keel_buf_adds(&b, "cartridge ");
		keel_buf_add_json_str(&b, keel_str_cstr(path));
		keel_buf_adds(&b, ": ");
		va_list ap;
		va_start(ap, fmt);
		keel_buf_vaddf(&b, fmt, ap);
		va_end(ap);
		*errmsg = b.data;
	}
	return KEEL_ECARTRIDGE;
}

int keel_cartridge_read_file(const char *path, char **text, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return -1;
	struct keel_buf b;
	keel_buf_init(&b);
	char chunk[65536];
	size_t n;
	while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
		keel_buf_add(&b, chunk, n);
	int err = ferror(f) ? EIO : 0;
	fclose(f);
	if (err) {
		keel_buf_free(&b);
		errno = err;
		return -1;
	}
	*text = b.data;
	*len = b.len;
	return 0;
}
