/*
 * cartridge_load.c - keel_cartridge_load: a name or path becomes a
 * cartridge. The built-in fleet cartridge (cartridges/fleet.json, embedded
 * at build time) by its name, a shared object by its ".so"
 * (cartridge_shared.c), anything else as a JSON file.
 */
#include "cartridge_parts.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), k = strlen(suffix);
	return n >= k && memcmp(s + n - k, suffix, k) == 0;
}

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

int keel_cartridge_load(const char *name_or_path, struct keel_cartridge **out,
			char **errmsg)
{
	if (errmsg)
		*errmsg = NULL;
	if (!out || !name_or_path)
		return KEEL_EINVAL;
	*out = NULL;
	if (strcmp(name_or_path, KEEL_BUILTIN_CARTRIDGE) == 0)
		return keel_cartridge_compile_named(keel_fleet_cartridge_json,
						    keel_fleet_cartridge_json_len, NULL,
						    out, errmsg);
	if (ends_with(name_or_path, ".so"))
		return keel_cartridge_load_shared(name_or_path, out, errmsg);
	char *text = NULL;
	size_t len = 0;
	if (keel_cartridge_read_file(name_or_path, &text, &len) != 0) {
		if (errno == ENOENT && !strchr(name_or_path, '/') &&
		    !ends_with(name_or_path, ".json"))
			return keel_cartridge_load_fail(
			    errmsg, name_or_path,
			    "no built-in cartridge of that name and no such file");
		return keel_cartridge_load_fail(errmsg, name_or_path, "cannot read: %s",
						strerror(errno));
	}
	int rc = keel_cartridge_compile_named(text ? text : "", len, name_or_path, out,
					      errmsg);
	free(text);
	return rc;
}
