/*
 * shared.c - a cartridge in a shared object: dlopen'ed, its
 * keel_cartridge_init registers C handlers, its optional
 * keel_cartridge_fini runs at keel_cartridge_free; identified by the
 * hash of the file's bytes, since its code cannot be recorded.
 */
#include "parts.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

typedef int (*keel_cartridge_init_fn)(struct keel_cartridge *c);

int keel_cartridge_load_shared(const char *path, struct keel_cartridge **out,
			       char **errmsg)
{
	/* dlopen searches the library path for a bare name; a cartridge is
	 * always a file, so make the path explicit. */
	struct keel_buf p;
	keel_buf_init(&p);
	if (!strchr(path, '/'))
		keel_buf_adds(&p, "./");
	keel_buf_adds(&p, path);
	dlerror();
	void *dl = dlopen(p.data, RTLD_NOW | RTLD_LOCAL);
	keel_buf_free(&p);
	if (!dl)
		return keel_cartridge_load_fail(errmsg, path, "cannot load: %s",
						dlerror());
	void *sym = dlsym(dl, "keel_cartridge_init");
	if (!sym) {
		dlclose(dl);
		return keel_cartridge_load_fail(errmsg, path,
						"no symbol \"keel_cartridge_init\"");
	}
	/* ISO C has no object-to-function pointer cast; POSIX guarantees the
	 * representations agree, so copy the bits. */
	keel_cartridge_init_fn init;
	memcpy(&init, &sym, sizeof init);
	keel_cartridge_fini_fn fini = NULL;
	if ((sym = dlsym(dl, "keel_cartridge_fini")))
		memcpy(&fini, &sym, sizeof fini);

	/* The cartridge is named after the file: "dir/acme.so" is "acme". */
	const char *base = strrchr(path, '/');
	base = base ? base + 1 : path;
	char *name = keel_xstrndup(base, strlen(base) - 3);
	struct keel_cartridge *c = keel_cartridge_new(name, "");
	free(name);
	int rc = init(c);
	if (rc != 0) {
		keel_cartridge_free(c);
		dlclose(dl);
		return keel_cartridge_load_fail(errmsg, path,
						"keel_cartridge_init returned %d", rc);
	}
	c->dl = dl;
	c->fini = fini;
	/* Identified by its file's bytes: its code cannot be recorded. */
	char *bytes = NULL;
	size_t nbytes = 0;
	if (keel_cartridge_read_file(path, &bytes, &nbytes) != 0) {
		keel_cartridge_free(c);
		return keel_cartridge_load_fail(errmsg, path, "cannot read: %s",
						strerror(errno));
	}
	keel_cartridge_set_hash(c, bytes ? bytes : "", nbytes);
	free(bytes);
	*out = c;
	return 0;
}
