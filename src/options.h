/*
 * options.h - taking a caller's options struct whose first member is the
 * size it was compiled with (keel.h, "Options structs"), so that structs
 * can grow at their end without breaking programs built against an older
 * header.
 */
#ifndef KEEL_OPTIONS_H
#define KEEL_OPTIONS_H

#include <stddef.h>

/* Copies the options at given into dst, a struct of `known` bytes whose
 * first member is its size_t size: the bytes the caller's struct has, and
 * zeros (each field's default) for the fields it did not know; dst's size
 * is set to known. Returns NULL, or why the options were refused (size 0,
 * smaller than the size field, or larger than known), a static string. */
const char *keel_options_copy(void *dst, size_t known, const void *given);

#endif
