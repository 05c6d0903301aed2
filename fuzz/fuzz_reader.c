/*
 * fuzz_reader.c - libFuzzer target for the NDJSON line reader.
 *
 * The first input byte chooses max_line (its low 6 bits; 0 means the
 * default) and how the rest is fed to the reader: as plain text, gzip- or
 * zstd-compressed here with zlib/libzstd, or raw (so arbitrary bytes reach
 * the decoders through sniffing). The input goes through a memfd, so the
 * reader sniffs it like stdin. Whenever the reader sees the same text as
 * the plain bytes, its lines must equal those of a reference splitter
 * written here the slow way; in raw mode it may also fail, with a message.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#include "keel.h"
#include "check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The next expected line of text[*pos..n), or false at the end. */
static bool model_next(const char *text, size_t n, size_t *pos, uint64_t *lineno,
		       size_t max_line, const char **line, size_t *len, bool *too_long)
{
	if (*pos == 0 && n >= 3 && memcmp(text, "\xef\xbb\xbf", 3) == 0)
		*pos = 3;
	while (*pos < n) {
		size_t i = *pos;
		const char *nl = memchr(text + i, '\n', n - i);
		size_t e = nl ? (size_t)(nl - text) : n;
		size_t l = e - i;
		*pos = e + 1;
		++*lineno;
		if (l > 0 && text[i + l - 1] == '\r')
			l--;
		bool blank = true;
		for (size_t k = 0; k < l; k++)
			if (text[i + k] != ' ' && text[i + k] != '\t' &&
			    text[i + k] != '\r')
				blank = false;
		if (blank && l <= max_line)
			continue;
		*line = text + i;
		*too_long = l > max_line;
		*len = *too_long ? max_line : l;
		return true;
	}
	return false;
}

static size_t gzip_bytes(const uint8_t *in, size_t n, uint8_t **out)
{
	z_stream zs;
	memset(&zs, 0, sizeof zs);
	CHECK(deflateInit2(&zs, 1, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) == Z_OK);
	size_t cap = deflateBound(&zs, (uLong)n) + 64;
	*out = malloc(cap);
	zs.next_in = (Bytef *)(uintptr_t)in;
	zs.avail_in = (uInt)n;
	zs.next_out = *out;
	zs.avail_out = (uInt)cap;
	CHECK(deflate(&zs, Z_FINISH) == Z_STREAM_END);
	size_t m = zs.total_out;
	deflateEnd(&zs);
	return m;
}

static size_t zstd_bytes(const uint8_t *in, size_t n, uint8_t **out)
{
	size_t cap = ZSTD_compressBound(n);
	*out = malloc(cap);
	size_t m = ZSTD_compress(*out, cap, in, n, 1);
	CHECK(!ZSTD_isError(m));
	return m;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	size_t max_line = data[0] & 63;
	int mode = data[0] >> 6; /* 0 plain, 1 gzip, 2 zstd, 3 raw */
	const uint8_t *text = data + 1;
	size_t n = size - 1;

	uint8_t *packed = NULL;
	size_t packed_len = n;
	if (mode == 1)
		packed_len = gzip_bytes(text, n, &packed);
	else if (mode == 2)
		packed_len = zstd_bytes(text, n, &packed);
	const uint8_t *feed = packed ? packed : text;

	/* Plain text that happens to start with a magic number is sniffed
	 * as compressed: only raw mode may fail then. */
	bool magic = n >= 2 && ((text[0] == 0x1f && text[1] == 0x8b) ||
				(n >= 4 && memcmp(text, "\x28\xb5\x2f\xfd", 4) == 0));
	bool must_match = mode == 1 || mode == 2 || !magic;

	int fd = memfd_create("fuzz_reader", 0);
	CHECK(fd >= 0);
	CHECK(write(fd, feed, packed_len) == (ssize_t)packed_len);
	char path[64];
	snprintf(path, sizeof path, "/proc/self/fd/%d", fd);

	struct keel_reader *r = NULL;
	char *err = NULL;
	CHECK(keel_reader_open(path, max_line, &r, &err) == 0);
	size_t eff = max_line ? max_line : (size_t)1 << 20;
	size_t pos = 0;
	uint64_t want_no = 0;
	const char *line, *want;
	size_t len, want_len;
	uint64_t lineno;
	bool too_long, want_long;
	int rc;
	while ((rc = keel_reader_next(r, &line, &len, &lineno, &too_long)) == 1) {
		CHECK(len <= eff);
		CHECK(!too_long || len == eff);
		if (!must_match)
			continue;
		CHECK(model_next((const char *)text, n, &pos, &want_no, eff, &want,
				 &want_len, &want_long));
		CHECK(lineno == want_no && too_long == want_long && len == want_len);
		CHECK(memcmp(line, want, len) == 0);
	}
	if (must_match) {
		CHECK(rc == 0);
		CHECK(!model_next((const char *)text, n, &pos, &want_no, eff, &want,
				  &want_len, &want_long));
	} else {
		CHECK(rc == 0 || (rc == KEEL_EIO && keel_reader_errmsg(r)[0] != 0));
	}
	uint64_t done, total;
	keel_reader_progress(r, &done, &total);
	CHECK(total == packed_len && done <= total);
	if (rc == 0)
		CHECK(done == total);
	keel_reader_close(r);
	close(fd);
	free(packed);
	return 0;
}
