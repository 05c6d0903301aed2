/*
 * version.c - keel_version(): the version of the library that is running,
 * as the build took it from keel.h (CMakeLists.txt, KEEL_BUILD_VERSION).
 */
#include "keel.h"

const char *keel_version(void)
{
	return KEEL_BUILD_VERSION;
}
