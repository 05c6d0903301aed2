/*
 * options.c - the one copy of a caller's options struct (options.h).
 */
#include "options.h"

#include <string.h>

const char *keel_options_copy(void *dst, size_t known, const void *given)
{
	size_t size;
	memset(dst, 0, known);
	memcpy(&size, given, sizeof size);
	if (size == 0)
		return "size is 0: set .size to sizeof the options struct";
	if (size < sizeof size)
		return "size is smaller than the size field itself";
	if (size > known)
		return "size is larger than this library's options struct "
		       "(built against a newer keel.h?)";
	memcpy(dst, given, size);
	memcpy(dst, &known, sizeof known);
	return NULL;
}
