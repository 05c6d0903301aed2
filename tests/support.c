/* support.c - see support.h. */
#include "support.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

char *keel_test_tmpdir(void)
{
	const char *base = getenv("TMPDIR");
	char tmpl[4096];
	snprintf(tmpl, sizeof tmpl, "%s/keel-test-XXXXXX", base ? base : "/tmp");
	char *dir = mkdtemp(tmpl);
	assert_non_null(dir);
	return strdup(dir);
}

void keel_test_rmdir(const char *dir)
{
	if (dir && strstr(dir, "keel-test-"))
		keel_test_sh("rm -rf '%s'", dir);
}

char *keel_test_read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	size_t cap = 1 << 16, n = 0;
	char *buf = malloc(cap + 1);
	size_t got;
	while ((got = fread(buf + n, 1, cap - n, f)) > 0) {
		n += got;
		if (n == cap) {
			cap *= 2;
			buf = realloc(buf, cap + 1);
		}
	}
	fclose(f);
	buf[n] = 0;
	if (len)
		*len = n;
	return buf;
}

void keel_test_write_file(const char *path, const char *text, size_t len)
{
	FILE *f = fopen(path, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(text, 1, len, f), len);
	assert_int_equal(fclose(f), 0);
}

int keel_test_sh(const char *fmt, ...)
{
	char cmd[8192];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(cmd, sizeof cmd, fmt, ap);
	va_end(ap);
	int st = system(cmd);
	if (st == -1 || !WIFEXITED(st))
		return -1;
	return WEXITSTATUS(st);
}

char *keel_test_dump(struct keel_store *s, const char *tenant)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	assert_non_null(f);
	assert_int_equal(keel_dump(s, tenant, f), 0);
	fclose(f);
	return buf;
}

/* See support.h. */
struct keel_cartridge *keel_test_fleet_cartridge(const char *from, const char *to)
{
	size_t len;
	char *json = keel_test_read_file(KEEL_SOURCE_DIR "/cartridges/fleet.json", &len);
	assert_non_null(json);
	if (from) {
		/* Every occurrence of from becomes to (same length or shorter). */
		size_t fl = strlen(from), tl = strlen(to);
		assert_true(tl <= fl);
		char *out = malloc(len + 1), *o = out;
		for (char *p = json; *p;) {
			if (!strncmp(p, from, fl)) {
				memcpy(o, to, tl);
				o += tl;
				p += fl;
			} else {
				*o++ = *p++;
			}
		}
		*o = 0;
		free(json);
		json = out;
		len = strlen(json);
	}
	struct keel_cartridge *c = NULL;
	char *err = NULL;
	assert_int_equal(keel_cartridge_compile(json, len, &c, &err), 0);
	free(json);
	return c;
}
