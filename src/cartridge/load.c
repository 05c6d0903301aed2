/*
 * load.c - keel_cartridge_load: a name or path becomes a
 * cartridge. The built-in fleet cartridge (cartridges/fleet.json, embedded
 * at build time) by its name, a shared object by its ".so"
 * (shared.c), anything else as a JSON file (read by file.c).
 */
#include "parts.h"
#include "event/json_write.h"

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
