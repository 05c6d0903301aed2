/*
 * support.h - helpers shared by the test binaries: cmocka includes, the main
 * that lets ctest run one case by name, and small file/process helpers.
 */
#ifndef KEEL_TEST_SUPPORT_H
#define KEEL_TEST_SUPPORT_H

#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "keel.h"

/* main() for a test binary; see keel_test_main. */
#define KEEL_TEST_MAIN(tests)                                                            \
	int main(int argc, char **argv)                                                  \
	{                                                                                \
		return keel_test_main(tests, sizeof tests / sizeof tests[0], argc, argv); \
	}

/* Runs a test binary's cases, and is how ctest finds and runs them:
 *   BINARY           runs every case;
 *   BINARY PATTERN   runs the cases whose names match PATTERN (fnmatch);
 *                    a pattern that matches no case fails (exit 1), so a
 *                    renamed case cannot pass by running nothing;
 *   BINARY --list    prints the case names, one a line (tests/cases.cmake
 *                    registers each as the ctest case BINARY.NAME).
 * Exits 1 when a case failed, else 77 (ctest's SKIP_RETURN_CODE) when a
 * case was skipped, else 0. */
int keel_test_main(const struct CMUnitTest *tests, size_t n, int argc, char **argv);

/* Skips the running case because something it needs is missing here (why
 * says what, e.g. "no MySQL server: KEEL_TEST_MYSQL_DIR is unset"): the
 * binary then exits 77 and ctest reports the case as skipped, never as
 * passed. Under CI=true, where everything the suite needs is installed, a
 * skip is a failure instead. cmocka's own skip() is poisoned below: it
 * would pass silently. */
#define keel_test_skip(why) keel_test_skip_at(__FILE__, __LINE__, why)
void keel_test_skip_at(const char *file, int line, const char *why);
/* True when the environment says this is CI (CI=true). */
bool keel_test_ci(void);
#undef skip
#pragma GCC poison skip

/* A fresh empty directory under $TMPDIR (malloc'd path); removed by
 * keel_test_rmdir. */
char *keel_test_tmpdir(void);
void keel_test_rmdir(const char *dir);
/* Reads a whole file (malloc'd, NUL-terminated), or NULL. */
char *keel_test_read_file(const char *path, size_t *len);
void keel_test_write_file(const char *path, const char *text, size_t len);
/* Runs a shell command; returns its exit status (or -1). */
int keel_test_sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* NDJSON text split into its lines in place (text is owned and freed with
 * it), for feeding ingesters line by line. */
struct keel_test_lines {
	char *text;
	char **lines;
	size_t n;
};
struct keel_test_lines *keel_test_lines_split(char *text);
/* A generated fleet stream (keel_generate_fleet), split. */
struct keel_test_lines *keel_test_lines_generate(uint64_t events, uint32_t tenants,
						 uint64_t seed, double late, double dups);
void keel_test_lines_free(struct keel_test_lines *t);

/* Read options for the valid time t (a compound literal, so it lives as
 * long as the enclosing block). */
#define KEEL_TEST_AT(t)                                                                  \
	(&(struct keel_read_options){                                                    \
	    .size = sizeof(struct keel_read_options), .at_set = true, .at = (t)})

/* The canonical dump of a store as a malloc'd string. */
char *keel_test_dump(struct keel_store *s, const char *tenant);

/* The rule for events a store cannot write (store.h, max_envelope): 30 fuel
 * reports of one tenant go into s at batch 500, line 11's envelope exactly
 * max bytes compacted, line 21's one byte more. Asserts that line 21 alone
 * is rejected, with its line, its id and the rule ("at most MAX bytes
 * (why)"), and that s then dumps exactly as a memory store given the other
 * 29 (so line 11 is stored whole). */
void keel_test_large_events(struct keel_store *s, size_t max, const char *why);

/* cartridges/fleet.json compiled, with every occurrence of from replaced by
 * to (no longer than from) when from is not NULL. */
struct keel_cartridge *keel_test_fleet_cartridge(const char *from, const char *to);

#endif
