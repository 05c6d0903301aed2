/*
 * reader.c - the NDJSON line reader (keel_reader_*): plain, gzip or zstd
 * input from a path or stdin, split into lines with a bounded buffer.
 *
 * Layout: the reader owns one text buffer of max_line + 2 + TEXT_CHUNK
 * bytes that never grows. Plain input is read() straight into it;
 * compressed input is read() into a separate buffer and decompressed into
 * it. Lines are found with memchr and handed out as pointers into the text
 * buffer (valid until the next call), so a plain file is never copied
 * except for the tail of a line carried over a refill.
 *
 * A line that does not end within max_line + 2 bytes (room for the "\r\n")
 * is too long: its first max_line bytes are returned flagged, and the rest
 * is discarded as it streams by, so memory stays bounded by max_line
 * whatever the input holds.
 *
 * Decisions (docs/time-and-envelopes.md):
 *  - lines end at '\n'; one '\r' before it is dropped; a last line without
 *    '\n' is still a line;
 *  - blank lines (nothing but spaces, tabs and '\r') are skipped silently,
 *    yet counted, so line numbers match what an editor shows;
 *  - a UTF-8 byte order mark at the very start of the input is dropped;
 *  - compression is chosen by the ".gz"/".zst" suffix (case-insensitive);
 *    stdin and any other path are sniffed by magic bytes; a suffix whose
 *    magic does not match is an error, an empty file is an empty input;
 *  - concatenated gzip members and zstd frames are read as one stream.
 */
#include "keel.h"
#include "util.h"

#include <errno.h>
#include <stdatomic.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#define TEXT_CHUNK ((size_t)1 << 20) /* plain read() size and refill room */
#define IN_CHUNK ((size_t)256 << 10) /* compressed read() size */
/* A zstd frame header's largest size (zstd.h has it as
 * ZSTD_FRAMEHEADERSIZE_MAX, only for static linking). */
#define ZSTD_FRAME_HEADER_MAX ((size_t)18)

enum reader_codec { CODEC_SNIFF, CODEC_PLAIN, CODEC_GZIP, CODEC_ZSTD };

struct keel_reader {
	int fd;
	bool own_fd;
	char *name; /* for messages: "\"path\"" or "stdin" */
	enum reader_codec codec;
	bool started; /* reader_start has run */
	size_t max_line;

	/* Compressed bytes: in[in_pos..in_len) not yet consumed. */
	unsigned char *in;
	size_t in_pos, in_len;
	bool in_eof;
	/* Bytes read from fd. Atomic because a progress display may poll it
	 * from another thread while this one reads (the CLI does). */
	_Atomic uint64_t done;
	uint64_t total; /* size of a regular file, else 0 */

	z_stream zs;
	bool zs_ready;
	bool gz_member_end; /* the last gzip member ended cleanly */
	ZSTD_DStream *zds;
	size_t zstd_left; /* last ZSTD_decompressStream result: 0 = frame done */

	/* Text: buf[start..end) not yet handed out; memchr resumes at scan. */
	char *buf;
	size_t cap, start, end, scan;
	bool text_eof;
	bool skipping; /* discarding the rest of a too-long line */
	bool failed;
	bool bom_checked;
	uint64_t lineno;
	struct keel_buf msg;
};

static const unsigned char gzip_magic[2] = {0x1f, 0x8b};
static const unsigned char zstd_magic[4] = {0x28, 0xb5, 0x2f, 0xfd};

static int reader_fail(struct keel_reader *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static int reader_fail(struct keel_reader *r, const char *fmt, ...)
{
	va_list ap;
	keel_buf_reset(&r->msg);
	va_start(ap, fmt);
	keel_buf_vaddf(&r->msg, fmt, ap);
	va_end(ap);
	r->failed = true;
	return KEEL_EIO;
}

/* Only this thread writes done: a relaxed load and store suffice. */
static void add_done(struct keel_reader *r, uint64_t n)
{
	uint64_t d = atomic_load_explicit(&r->done, memory_order_relaxed);
	atomic_store_explicit(&r->done, d + n, memory_order_relaxed);
}

static bool has_suffix(const char *path, const char *suffix)
{
	size_t n = strlen(path), k = strlen(suffix);
	return n > k && strcasecmp(path + n - k, suffix) == 0;
}

/* Appends up to IN_CHUNK compressed bytes to in[], compacting it first.
 * Returns the bytes read, 0 at end of file, or KEEL_EIO. */
static ssize_t read_in(struct keel_reader *r)
{
	if (r->in_pos > 0) {
		memmove(r->in, r->in + r->in_pos, r->in_len - r->in_pos);
		r->in_len -= r->in_pos;
		r->in_pos = 0;
	}
	if (r->in_len == IN_CHUNK)
		return 1; /* full: the caller has bytes to work on */
	ssize_t n;
	do
		n = read(r->fd, r->in + r->in_len, IN_CHUNK - r->in_len);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return reader_fail(r, "cannot read %s: %s", r->name, strerror(errno));
	if (n == 0)
		r->in_eof = true;
	r->in_len += (size_t)n;
	add_done(r, (uint64_t)n);
	return n;
}

/* Offset in the file of the next unconsumed compressed byte. */
static uint64_t in_offset(const struct keel_reader *r)
{
	return atomic_load_explicit(&r->done, memory_order_relaxed) -
	       (r->in_len - r->in_pos);
}

static bool starts_with(const unsigned char *p, size_t n, const unsigned char *magic,
			size_t k)
{
	return memcmp(p, magic, n < k ? n : k) == 0;
}

/* Reads the first bytes and settles the codec: enough to tell plain text
 * from a magic number, without waiting for more than the input has sent
 * (a stream starting with '{' is known to be plain after one byte). */
static int reader_start(struct keel_reader *r)
{
	while (!r->in_eof && r->in_len < sizeof zstd_magic &&
	       (starts_with(r->in, r->in_len, gzip_magic, sizeof gzip_magic) ||
		starts_with(r->in, r->in_len, zstd_magic, sizeof zstd_magic))) {
		if (read_in(r) < 0)
			return KEEL_EIO;
	}
	bool is_gzip = r->in_len >= sizeof gzip_magic &&
		       starts_with(r->in, r->in_len, gzip_magic, sizeof gzip_magic);
	bool is_zstd = r->in_len >= sizeof zstd_magic &&
		       starts_with(r->in, r->in_len, zstd_magic, sizeof zstd_magic);
	/* Skippable zstd frames (0x184D2A5?) may open a .zst file too. */
	bool is_skippable = r->in_len >= 4 && (r->in[0] & 0xf0) == 0x50 &&
			    r->in[1] == 0x2a && r->in[2] == 0x4d && r->in[3] == 0x18;

	if (r->codec == CODEC_SNIFF)
		r->codec = is_gzip ? CODEC_GZIP : is_zstd ? CODEC_ZSTD : CODEC_PLAIN;
	if (r->in_len == 0)
		r->codec = CODEC_PLAIN; /* an empty file is an empty input */
	if (r->codec == CODEC_GZIP && !is_gzip)
		return reader_fail(r, "%s: not gzip data", r->name);
	if (r->codec == CODEC_ZSTD && !is_zstd && !is_skippable)
		return reader_fail(r, "%s: not zstd data", r->name);

	if (r->codec == CODEC_GZIP) {
		/* 15 + 16: a gzip wrapper, never raw or zlib streams. */
		if (inflateInit2(&r->zs, 15 + 16) != Z_OK)
			return reader_fail(r, "%s: cannot start gzip decoder", r->name);
		r->zs_ready = true;
	} else if (r->codec == CODEC_ZSTD) {
		r->zds = ZSTD_createDStream();
		if (!r->zds)
			return reader_fail(r, "%s: cannot start zstd decoder", r->name);
		r->zstd_left = ZSTD_initDStream(r->zds);
	} else {
		/* Plain: hand the sniffed bytes over to the text buffer. */
		memcpy(r->buf + r->end, r->in, r->in_len);
		r->end += r->in_len;
		r->in_pos = r->in_len = 0;
	}
	return 0;
}

/* Decompresses gzip into buf[end..cap). Returns bytes produced (> 0), 0 at
 * the clean end of the last member, or KEEL_EIO. */
static ssize_t fill_gzip(struct keel_reader *r)
{
	for (;;) {
		if (r->in_pos == r->in_len && !r->in_eof && read_in(r) < 0)
			return KEEL_EIO;
		size_t avail = r->in_len - r->in_pos;
		if (r->gz_member_end) {
			if (avail == 0)
				return 0;
			/* Another member follows (as `cat a.gz b.gz` makes). */
			inflateReset(&r->zs);
			r->gz_member_end = false;
		}
		size_t room = r->cap - r->end;
		r->zs.next_in = r->in + r->in_pos;
		r->zs.avail_in = (uInt)(avail < UINT32_MAX ? avail : UINT32_MAX);
		r->zs.next_out = (unsigned char *)r->buf + r->end;
		r->zs.avail_out = (uInt)(room < UINT32_MAX ? room : UINT32_MAX);
		uInt in_before = r->zs.avail_in, out_before = r->zs.avail_out;
		int ret = inflate(&r->zs, Z_NO_FLUSH);
		r->in_pos += in_before - r->zs.avail_in;
		size_t produced = out_before - r->zs.avail_out;
		r->end += produced;
		if (ret == Z_STREAM_END)
			r->gz_member_end = true;
		else if (ret != Z_OK && ret != Z_BUF_ERROR)
			return reader_fail(r, "%s: corrupt gzip data at byte %llu (%s)",
					   r->name, (unsigned long long)in_offset(r),
					   r->zs.msg ? r->zs.msg : "invalid data");
		if (produced > 0)
			return (ssize_t)produced;
		if (!r->gz_member_end && r->in_pos == r->in_len && r->in_eof)
			return reader_fail(r, "%s: truncated gzip data at byte %llu",
					   r->name, (unsigned long long)in_offset(r));
	}
}

/* Same for zstd; frames follow each other without any reset. */
static ssize_t fill_zstd(struct keel_reader *r)
{
	for (;;) {
		if (r->in_pos == r->in_len && !r->in_eof && read_in(r) < 0)
			return KEEL_EIO;
		/* Only a finished frame may end the input. Asking the decoder
		 * with nothing left would answer with the header size of a
		 * next frame, so do not ask. */
		if (r->in_pos == r->in_len && r->in_eof && r->zstd_left == 0)
			return 0;
		/* At most the input the decoder asks for next (the rest of the
		 * block it is in, and the next block's header): a block is then
		 * decoded and handed out by itself, so a damaged block costs
		 * only its own lines, and an error names the offset where that
		 * block starts (on an error the decoder reports no progress, so
		 * a call given more would name where the call started). */
		size_t want = r->zstd_left ? r->zstd_left : ZSTD_FRAME_HEADER_MAX;
		size_t size = r->in_len - r->in_pos > want ? r->in_pos + want : r->in_len;
		ZSTD_inBuffer in = {r->in, size, r->in_pos};
		ZSTD_outBuffer out = {r->buf + r->end, r->cap - r->end, 0};
		size_t ret = ZSTD_decompressStream(r->zds, &out, &in);
		bool progress = in.pos > r->in_pos || out.pos > 0;
		r->in_pos = in.pos;
		if (ZSTD_isError(ret)) {
			const char *why = ZSTD_getErrorName(ret);
			return reader_fail(r, "%s: corrupt zstd data at byte %llu (%c%s)",
					   r->name, (unsigned long long)in_offset(r),
					   why[0] >= 'A' && why[0] <= 'Z' ? why[0] + 32
									  : why[0],
					   why + 1);
		}
		if (progress)
			r->zstd_left = ret;
		r->end += out.pos;
		if (out.pos > 0)
			return (ssize_t)out.pos;
		if (r->in_pos == r->in_len && r->in_eof && r->zstd_left != 0)
			return reader_fail(r, "%s: truncated zstd data at byte %llu",
					   r->name, (unsigned long long)in_offset(r));
	}
}

static ssize_t fill_plain(struct keel_reader *r)
{
	ssize_t n;
	do
		n = read(r->fd, r->buf + r->end, r->cap - r->end);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return reader_fail(r, "cannot read %s: %s", r->name, strerror(errno));
	r->end += (size_t)n;
	add_done(r, (uint64_t)n);
	return n;
}

/* Makes room and appends more text to buf. Returns > 0, 0 at the end of
 * the input, or KEEL_EIO. */
static ssize_t fill(struct keel_reader *r)
{
	/* What is pending is shorter than max_line + 2 (else it was cut as a
	 * too-long line), so compaction always leaves TEXT_CHUNK of room. */
	if (r->cap - r->end < TEXT_CHUNK && r->start > 0) {
		memmove(r->buf, r->buf + r->start, r->end - r->start);
		r->end -= r->start;
		r->scan -= r->start;
		r->start = 0;
	}
	if (!r->started) {
		r->started = true;
		size_t before = r->end;
		if (reader_start(r) < 0)
			return KEEL_EIO;
		if (r->end > before)
			return (ssize_t)(r->end - before);
		if (r->codec == CODEC_PLAIN && r->in_eof)
			return 0; /* never read() a terminal again after EOF */
	}
	switch (r->codec) {
	case CODEC_GZIP:
		return fill_gzip(r);
	case CODEC_ZSTD:
		return fill_zstd(r);
	default:
		return fill_plain(r);
	}
}

static bool is_blank(const char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != ' ' && p[i] != '\t' && p[i] != '\r')
			return false;
	return true;
}

int keel_reader_open(const char *path, size_t max_line, struct keel_reader **out,
		     char **errmsg)
{
	*out = NULL;
	if (errmsg)
		*errmsg = NULL;
	if (!path || max_line > SIZE_MAX / 4) {
		if (errmsg)
			*errmsg = keel_xstrdup(!path ? "no input path given"
						     : "maximum line length too large");
		return KEEL_EINVAL;
	}

	struct keel_reader *r = keel_xcalloc(1, sizeof *r);
	keel_buf_init(&r->msg);
	r->max_line = max_line ? max_line : KEEL_DEFAULT_MAX_LINE;
	r->codec = CODEC_SNIFF;
	if (strcmp(path, "-") == 0) {
		r->fd = STDIN_FILENO;
		r->name = keel_xstrdup("stdin");
	} else {
		struct keel_buf name;
		keel_buf_init(&name);
		keel_buf_addf(&name, "\"%s\"", path);
		r->name = name.data;
		r->fd = open(path, O_RDONLY | O_CLOEXEC);
		if (r->fd < 0) {
			if (errmsg) {
				keel_buf_init(&name);
				keel_buf_addf(&name, "cannot open %s: %s", r->name,
					      strerror(errno));
				*errmsg = name.data;
			}
			free(r->name);
			keel_buf_free(&r->msg);
			free(r);
			return KEEL_EIO;
		}
		r->own_fd = true;
		if (has_suffix(path, ".gz"))
			r->codec = CODEC_GZIP;
		else if (has_suffix(path, ".zst"))
			r->codec = CODEC_ZSTD;
	}

	struct stat st;
	if (fstat(r->fd, &st) == 0 && S_ISREG(st.st_mode)) {
		off_t pos = lseek(r->fd, 0, SEEK_CUR);
		r->total = (uint64_t)st.st_size;
		if (pos > 0 && pos <= st.st_size)
			r->total -= (uint64_t)pos;
		posix_fadvise(r->fd, 0, 0, POSIX_FADV_SEQUENTIAL);
	}

	r->in = keel_xmalloc(IN_CHUNK);
	r->cap = r->max_line + 2 + TEXT_CHUNK;
	r->buf = keel_xmalloc(r->cap);
	*out = r;
	return 0;
}

/* Hands out buf[s..e) as line number ++lineno; false if it is blank. */
static bool take_line(struct keel_reader *r, size_t s, size_t e, const char **line,
		      size_t *len, uint64_t *lineno, bool *too_long)
{
	const char *p = r->buf + s;
	size_t n = e - s;

	r->lineno++;
	if (n > 0 && p[n - 1] == '\r')
		n--;
	/* Length first: a long line is too long even if it is all blanks, as
	 * the cut in keel_reader_next decides before seeing the whole line. */
	*too_long = n > r->max_line;
	if (!*too_long && is_blank(p, n))
		return false;
	*line = p;
	*len = *too_long ? r->max_line : n;
	*lineno = r->lineno;
	return true;
}

int keel_reader_next(struct keel_reader *r, const char **line, size_t *len,
		     uint64_t *lineno, bool *too_long)
{
	if (r->failed)
		return KEEL_EIO;
	for (;;) {
		if (!r->bom_checked) {
			/* A UTF-8 byte order mark may open the input; wait only
			 * while what has arrived could still be one. */
			size_t have = r->end - r->start;
			size_t k = have < 3 ? have : 3;
			bool prefix = memcmp(r->buf + r->start, "\xef\xbb\xbf", k) == 0;
			if (have >= 3 || !prefix || r->text_eof) {
				if (have >= 3 && prefix)
					r->start = r->scan = r->start + 3;
				r->bom_checked = true;
			}
		}
		if (!r->bom_checked) {
			/* fall through to fill */
		} else if (r->skipping) {
			char *nl = memchr(r->buf + r->start, '\n', r->end - r->start);
			if (nl) {
				r->start = r->scan = (size_t)(nl - r->buf) + 1;
				r->skipping = false;
				continue;
			}
			r->start = r->scan = r->end;
		} else {
			char *nl = memchr(r->buf + r->scan, '\n', r->end - r->scan);
			if (nl) {
				size_t s = r->start, e = (size_t)(nl - r->buf);
				r->start = r->scan = e + 1;
				if (take_line(r, s, e, line, len, lineno, too_long))
					return 1;
				continue;
			}
			r->scan = r->end;
			if (r->end - r->start >= r->max_line + 2) {
				/* No newline in reach: cut the line here and
				 * drop the rest of it as it arrives. */
				*line = r->buf + r->start;
				*len = r->max_line;
				r->start = r->scan = r->end;
				r->skipping = true;
				*lineno = ++r->lineno;
				*too_long = true;
				return 1;
			}
		}
		if (r->text_eof) {
			if (r->skipping || r->end == r->start)
				return 0;
			size_t s = r->start;
			r->start = r->scan = r->end;
			if (take_line(r, s, r->end, line, len, lineno, too_long))
				return 1;
			return 0;
		}
		ssize_t n = fill(r);
		if (n < 0)
			return KEEL_EIO;
		if (n == 0)
			r->text_eof = true;
	}
}

void keel_reader_progress(const struct keel_reader *r, uint64_t *done, uint64_t *total)
{
	*done = atomic_load_explicit(&r->done, memory_order_relaxed);
	*total = r->total;
}

const char *keel_reader_errmsg(const struct keel_reader *r)
{
	return r->msg.data ? r->msg.data : "";
}

void keel_reader_close(struct keel_reader *r)
{
	if (!r)
		return;
	if (r->own_fd)
		close(r->fd);
	if (r->zs_ready)
		inflateEnd(&r->zs);
	ZSTD_freeDStream(r->zds);
	free(r->in);
	free(r->buf);
	free(r->name);
	keel_buf_free(&r->msg);
	free(r);
}
