/*
 * check.h - the one assertion of the fuzz targets: a property that does
 * not hold aborts, which libFuzzer reports as a crash and saves the input.
 * (assert() would vanish under NDEBUG.)
 */
#ifndef KEEL_FUZZ_CHECK_H
#define KEEL_FUZZ_CHECK_H

#include <stdio.h>
#include <stdlib.h>

#define CHECK(cond)                                                                      \
	do {                                                                             \
		if (!(cond)) {                                                           \
			fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, \
				#cond);                                                  \
			abort();                                                         \
		}                                                                        \
	} while (0)

#endif
