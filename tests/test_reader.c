/*
 * test_reader.c - the NDJSON line reader (src/event/reader.c): plain, gzip and
 * zstd files, stdin through a pipe, line endings, blank lines, too-long
 * lines, corrupt input and progress.
 *
 * Compressed inputs are made with the gzip and zstd command-line tools, so
 * the reader is checked against independent encoders. Besides hand-made
 * cases, a reference splitter (split_model) written the obvious way defines
 * the expected lines of random multi-megabyte inputs, which cross the
 * reader's buffer boundaries at every possible place.
 */
#include "support.h"

#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct fixture {
	char *dir;
	char path[4096];
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof *f);
	f->dir = keel_test_tmpdir();
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	keel_test_rmdir(f->dir);
	free(f->dir);
	free(f);
	return 0;
}

static const char *in_dir(struct fixture *f, const char *name)
{
	snprintf(f->path, sizeof f->path, "%s/%s", f->dir, name);
	return f->path;
}

/* A growable string for transcripts. */
struct text {
	char *s;
	size_t len, cap;
};

static void text_add(struct text *t, const char *p, size_t n)
{
	if (t->len + n + 1 > t->cap) {
		t->cap = (t->len + n + 1) * 2;
		t->s = realloc(t->s, t->cap);
	}
	memcpy(t->s + t->len, p, n);
	t->len += n;
	t->s[t->len] = 0;
}

static void text_line(struct text *t, uint64_t lineno, bool too_long, const char *p,
		      size_t n)
{
	char head[64];
	int k = snprintf(head, sizeof head, "%llu%s:", (unsigned long long)lineno,
			 too_long ? "!" : "");
	text_add(t, head, (size_t)k);
	text_add(t, p, n);
	text_add(t, "\n", 1);
}

/* Reads all of a reader into a transcript "lineno[!]:text\n" per line
 * ('!' marks too long). Returns the last keel_reader_next result. */
static int transcribe(struct keel_reader *r, struct text *t)
{
	const char *line;
	size_t len;
	uint64_t lineno;
	bool too_long;
	int rc;
	t->len = 0;
	text_add(t, "", 0);
	while ((rc = keel_reader_next(r, &line, &len, &lineno, &too_long)) == 1)
		text_line(t, lineno, too_long, line, len);
	return rc;
}

/* Opens path, checks it reads to the end as expected, and returns the
 * transcript (malloc'd). */
static char *read_all(const char *path, size_t max_line)
{
	struct keel_reader *r = NULL;
	char *err = NULL;
	int rc = keel_reader_open(path, max_line, &r, &err);
	if (rc != 0)
		fail_msg("open %s: %s", path, err);
	struct text t = {0};
	rc = transcribe(r, &t);
	if (rc != 0)
		fail_msg("read %s: %d %s", path, rc, keel_reader_errmsg(r));
	/* End of input is sticky. */
	const char *line;
	size_t len;
	uint64_t lineno;
	bool too_long;
	assert_int_equal(keel_reader_next(r, &line, &len, &lineno, &too_long), 0);
	keel_reader_close(r);
	return t.s;
}

/* The expected transcript, computed the slow, obvious way. */
static char *split_model(const char *data, size_t n, size_t max_line)
{
	struct text t = {0};
	text_add(&t, "", 0);
	size_t i = 0;
	uint64_t lineno = 0;
	if (n >= 3 && memcmp(data, "\xef\xbb\xbf", 3) == 0)
		i = 3;
	while (i < n) {
		const char *nl = memchr(data + i, '\n', n - i);
		size_t e = nl ? (size_t)(nl - data) : n;
		size_t len = e - i;
		lineno++;
		if (len > 0 && data[i + len - 1] == '\r')
			len--;
		bool blank = true;
		for (size_t k = 0; k < len; k++)
			if (data[i + k] != ' ' && data[i + k] != '\t' &&
			    data[i + k] != '\r')
				blank = false;
		if (!blank || len > max_line)
			text_line(&t, lineno, len > max_line, data + i,
				  len > max_line ? max_line : len);
		i = e + 1;
	}
	return t.s;
}

static void expect_file(const char *path, size_t max_line, const char *expected)
{
	char *got = read_all(path, max_line);
	assert_string_equal(got, expected);
	free(got);
}

static void compress_to(const char *tool, const char *src, const char *dst)
{
	assert_int_equal(keel_test_sh("%s -q -c '%s' > '%s'", tool, src, dst), 0);
}

static void expect_error(const char *path, const char *message_prefix)
{
	struct keel_reader *r = NULL;
	char *err = NULL;
	assert_int_equal(keel_reader_open(path, 0, &r, &err), 0);
	struct text t = {0};
	int rc = transcribe(r, &t);
	assert_int_equal(rc, KEEL_EIO);
	const char *msg = keel_reader_errmsg(r);
	if (strncmp(msg, message_prefix, strlen(message_prefix)) != 0)
		fail_msg("message \"%s\" does not start with \"%s\"", msg,
			 message_prefix);
	/* Errors are sticky. */
	const char *line;
	size_t len;
	uint64_t lineno;
	bool too_long;
	assert_int_equal(keel_reader_next(r, &line, &len, &lineno, &too_long), KEEL_EIO);
	keel_reader_close(r);
	free(t.s);
}

static char *read_stdin_from(const char *cmd, size_t max_line, uint64_t *total);

static void test_plain_lines(void **state)
{
	struct fixture *f = *state;
	const char *p = in_dir(f, "a.ndjson");
	const char data[] = "{\"a\":1}\n{\"b\":2}\n{\"c\":3}\n";
	keel_test_write_file(p, data, strlen(data));
	expect_file(p, 0, "1:{\"a\":1}\n2:{\"b\":2}\n3:{\"c\":3}\n");
}

static void test_crlf_and_final_line(void **state)
{
	struct fixture *f = *state;
	const char *p = in_dir(f, "crlf.ndjson");
	/* One '\r' before '\n' goes; a lone '\r' inside a line stays; a last
	 * line without '\n' is still read, and its '\r' goes too. */
	const char data[] = "one\r\ntw\ro\r\n\r\nthree\r\r\nfour\r";
	keel_test_write_file(p, data, strlen(data));
	expect_file(p, 0, "1:one\n2:tw\ro\n4:three\r\n5:four\n");

	p = in_dir(f, "nofinal.ndjson");
	keel_test_write_file(p, "x\ny", 3);
	expect_file(p, 0, "1:x\n2:y\n");
}

static void test_blank_lines_counted(void **state)
{
	struct fixture *f = *state;
	const char *p = in_dir(f, "blank.ndjson");
	const char data[] = "\n\na\n \t \n\r\nb\n\n";
	keel_test_write_file(p, data, strlen(data));
	expect_file(p, 0, "3:a\n6:b\n");

	p = in_dir(f, "allblank.ndjson");
	keel_test_write_file(p, "\n\n  \n", 5);
	expect_file(p, 0, "");
}

static void test_empty_inputs(void **state)
{
	struct fixture *f = *state;
	const char *names[] = {"empty.ndjson", "empty.gz", "empty.zst"};
	for (size_t i = 0; i < 3; i++) {
		const char *p = in_dir(f, names[i]);
		keel_test_write_file(p, "", 0);
		expect_file(p, 0, "");
	}
}

static void test_bom_dropped(void **state)
{
	struct fixture *f = *state;
	const char *p = in_dir(f, "bom.ndjson");
	const char data[] = "\xef\xbb\xbf{\"a\":1}\n\xef\xbb\xbf{}\n";
	keel_test_write_file(p, data, strlen(data));
	/* Only at the very start of the input. */
	expect_file(p, 0, "1:{\"a\":1}\n2:\xef\xbb\xbf{}\n");
	/* The mark does not count towards the line length. */
	keel_test_write_file(p,
			     "\xef\xbb\xbf"
			     "12345678\n",
			     12);
	expect_file(p, 8, "1:12345678\n");
	/* A mark alone, or part of one, is no line; a partial mark is data. */
	keel_test_write_file(p, "\xef\xbb\xbf", 3);
	expect_file(p, 0, "");
	keel_test_write_file(p, "\xef\xbb", 2);
	expect_file(p, 0, "1:\xef\xbb\n");
	/* Through a pipe, one byte at a time (the writer's pauses are the
	 * point: each byte arrives in a read of its own). */
	uint64_t total;
	char *got = read_stdin_from(
	    "for c in '\\357' '\\273' '\\277' '{' '}' '\\n'; do printf \"$c\"; "
	    "sleep 0.02; done",
	    0, &total);
	assert_string_equal(got, "1:{}\n");
	free(got);
}

static void test_gzip(void **state)
{
	struct fixture *f = *state;
	char src[4096], gz[4096];
	snprintf(src, sizeof src, "%s", in_dir(f, "g.ndjson"));
	snprintf(gz, sizeof gz, "%s", in_dir(f, "g.ndjson.gz"));
	const char data[] = "{\"a\":1}\r\n\n{\"b\":2}";
	keel_test_write_file(src, data, strlen(data));
	compress_to("gzip", src, gz);
	expect_file(gz, 0, "1:{\"a\":1}\n3:{\"b\":2}\n");

	/* The suffix is matched case-insensitively. */
	char upper[4096];
	snprintf(upper, sizeof upper, "%s", in_dir(f, "G.NDJSON.GZ"));
	assert_int_equal(keel_test_sh("cp '%s' '%s'", gz, upper), 0);
	expect_file(upper, 0, "1:{\"a\":1}\n3:{\"b\":2}\n");
}

static void test_gzip_concatenated_members(void **state)
{
	struct fixture *f = *state;
	char a[4096], b[4096], cat[4096];
	snprintf(a, sizeof a, "%s", in_dir(f, "a.gz"));
	snprintf(b, sizeof b, "%s", in_dir(f, "b.gz"));
	snprintf(cat, sizeof cat, "%s", in_dir(f, "ab.gz"));
	/* The first member ends mid-line: members join into one stream. */
	assert_int_equal(keel_test_sh("printf 'one\\ntw' | gzip -c > '%s'", a), 0);
	assert_int_equal(keel_test_sh("printf 'o\\nthree\\n' | gzip -c > '%s'", b), 0);
	assert_int_equal(keel_test_sh("cat '%s' '%s' '%s' > '%s'", a, b, a, cat), 0);
	expect_file(cat, 0, "1:one\n2:two\n3:three\n4:one\n5:tw\n");
}

static void test_zstd(void **state)
{
	struct fixture *f = *state;
	char a[4096], b[4096], cat[4096];
	snprintf(a, sizeof a, "%s", in_dir(f, "a.zst"));
	snprintf(b, sizeof b, "%s", in_dir(f, "b.zst"));
	snprintf(cat, sizeof cat, "%s", in_dir(f, "ab.zst"));
	assert_int_equal(keel_test_sh("printf 'one\\r\\ntw' | zstd -q -c > '%s'", a), 0);
	assert_int_equal(keel_test_sh("printf 'o\\n\\nthree\\n' | zstd -q -c > '%s'", b),
			 0);
	expect_file(a, 0, "1:one\n2:tw\n");
	/* Concatenated frames are one stream. */
	assert_int_equal(keel_test_sh("cat '%s' '%s' > '%s'", a, b, cat), 0);
	expect_file(cat, 0, "1:one\n2:two\n4:three\n");
}

/* Reads stdin replaced by the output of a shell command (a real pipe). */
static char *read_stdin_from(const char *cmd, size_t max_line, uint64_t *total)
{
	fflush(stdout);
	FILE *p = popen(cmd, "r");
	assert_non_null(p);
	int saved = dup(STDIN_FILENO);
	assert_true(saved >= 0);
	assert_int_equal(dup2(fileno(p), STDIN_FILENO), STDIN_FILENO);

	struct keel_reader *r = NULL;
	char *err = NULL;
	assert_int_equal(keel_reader_open("-", max_line, &r, &err), 0);
	struct text t = {0};
	int rc = transcribe(r, &t);
	if (rc != 0)
		fail_msg("stdin: %s", keel_reader_errmsg(r));
	uint64_t done;
	keel_reader_progress(r, &done, total);
	keel_reader_close(r);

	assert_int_equal(dup2(saved, STDIN_FILENO), STDIN_FILENO);
	close(saved);
	assert_int_equal(pclose(p), 0);
	return t.s;
}

static void test_stdin_pipe(void **state)
{
	struct fixture *f = *state;
	const char *p = in_dir(f, "s.ndjson");
	const char data[] = "{\"a\":1}\r\n\n{\"b\":2}\nlast";
	const char *expected = "1:{\"a\":1}\n3:{\"b\":2}\n4:last\n";
	keel_test_write_file(p, data, strlen(data));
	char cmd[8192];
	uint64_t total = 99;

	snprintf(cmd, sizeof cmd, "cat '%s'", p);
	char *got = read_stdin_from(cmd, 0, &total);
	assert_string_equal(got, expected);
	assert_int_equal(total, 0); /* a pipe has no known size */
	free(got);

	/* Compression on stdin is found from the magic bytes. */
	snprintf(cmd, sizeof cmd, "gzip -c '%s'", p);
	got = read_stdin_from(cmd, 0, &total);
	assert_string_equal(got, expected);
	free(got);

	snprintf(cmd, sizeof cmd, "zstd -q -c '%s'", p);
	got = read_stdin_from(cmd, 0, &total);
	assert_string_equal(got, expected);
	free(got);

	/* One byte per write: sniffing must not need four bytes of plain (the
	 * writer's pause is the point: the bytes come in two reads). */
	got = read_stdin_from("for c in '{' '}' ; do printf \"$c\"; sleep 0.05; done", 0,
			      &total);
	assert_string_equal(got, "1:{}\n");
	free(got);
}

static void test_sniff_plain_path(void **state)
{
	struct fixture *f = *state;
	char src[4096], dst[4096];
	snprintf(src, sizeof src, "%s", in_dir(f, "x.ndjson"));
	snprintf(dst, sizeof dst, "%s", in_dir(f, "x.data"));
	keel_test_write_file(src, "a\nb\n", 4);
	/* A path without a known suffix is sniffed like stdin. */
	compress_to("zstd", src, dst);
	expect_file(dst, 0, "1:a\n2:b\n");
	compress_to("gzip", src, dst);
	expect_file(dst, 0, "1:a\n2:b\n");
}

static void test_max_line_boundaries(void **state)
{
	struct fixture *f = *state;
	const char *p = in_dir(f, "bound.ndjson");
	/* max_line 8: 8 bytes fit, with or without "\r\n"; 9 do not. */
	const char data[] = "12345678\n12345678\r\n123456789\n123456789\r\n"
			    "1234567890123456789012345\nok\n12345678\r";
	keel_test_write_file(p, data, strlen(data));
	expect_file(p, 8,
		    "1:12345678\n2:12345678\n3!:12345678\n4!:12345678\n"
		    "5!:12345678\n6:ok\n7:12345678\n");
	/* Length is checked before blankness: a long run of blanks is a
	 * too-long line, whether or not its end is in the same read. */
	keel_test_write_file(p, "          \nok\n   \n", 18);
	expect_file(p, 8, "1!:        \n2:ok\n");
	/* A too-long last line without a newline. */
	keel_test_write_file(p, "ok\n1234567890123", 15);
	expect_file(p, 8, "1:ok\n2!:12345678\n");
}

static size_t heap_in_use(void)
{
	struct mallinfo2 mi = mallinfo2();
	return mi.uordblks + mi.hblkhd;
}

/* A 10 MiB line between two normal lines, plain and compressed: both
 * neighbours are read, the long one is flagged, and it is never buffered
 * whole. */
static void test_ten_mib_line(void **state)
{
	struct fixture *f = *state;
	size_t big = (size_t)10 << 20;
	size_t n = big + 64;
	char *data = malloc(n);
	size_t k = 0;
	k += (size_t)snprintf(data, n, "{\"first\":1}\n");
	for (size_t i = 0; i < big; i++)
		data[k + i] = (char)('a' + i % 26);
	k += big;
	k += (size_t)snprintf(data + k, n - k, "\n{\"last\":3}\n");

	char plain[4096], gz[4096], zst[4096];
	snprintf(plain, sizeof plain, "%s", in_dir(f, "big.ndjson"));
	snprintf(gz, sizeof gz, "%s", in_dir(f, "big.ndjson.gz"));
	snprintf(zst, sizeof zst, "%s", in_dir(f, "big.ndjson.zst"));
	keel_test_write_file(plain, data, k);
	compress_to("gzip", plain, gz);
	compress_to("zstd", plain, zst);
	free(data);

	const char *paths[] = {plain, gz, zst};
	for (size_t pi = 0; pi < 3; pi++) {
		size_t base = heap_in_use(), peak = 0;
		struct keel_reader *r = NULL;
		char *err = NULL;
		assert_int_equal(keel_reader_open(paths[pi], 0, &r, &err), 0);
		const char *line;
		size_t len;
		uint64_t lineno;
		bool too_long;

		assert_int_equal(keel_reader_next(r, &line, &len, &lineno, &too_long), 1);
		assert_int_equal(lineno, 1);
		assert_false(too_long);
		assert_memory_equal(line, "{\"first\":1}", len);

		assert_int_equal(keel_reader_next(r, &line, &len, &lineno, &too_long), 1);
		assert_int_equal(lineno, 2);
		assert_true(too_long);
		assert_int_equal(len, KEEL_DEFAULT_MAX_LINE); /* max_line 0 */
		for (size_t i = 0; i < len; i++)
			if (line[i] != (char)('a' + i % 26))
				fail_msg("byte %zu of the long line differs", i);
		size_t now = heap_in_use();
		peak = now > peak ? now : peak;

		assert_int_equal(keel_reader_next(r, &line, &len, &lineno, &too_long), 1);
		assert_int_equal(lineno, 3);
		assert_false(too_long);
		assert_int_equal(len, strlen("{\"last\":3}"));
		assert_memory_equal(line, "{\"last\":3}", len);
		now = heap_in_use();
		peak = now > peak ? now : peak;

		assert_int_equal(keel_reader_next(r, &line, &len, &lineno, &too_long), 0);
		keel_reader_close(r);
		/* The reader holds about 2 MiB (max_line + a read chunk) plus
		 * the decoder's window: far below the 10 MiB line. Under
		 * sanitizers mallinfo2 sees nothing and this holds trivially. */
		if (peak > base && peak - base > ((size_t)8 << 20))
			fail_msg("%s: %zu bytes in use while reading", paths[pi],
				 peak - base);
	}
}

/* Random inputs of a few MiB, every kind of line ending, blank lines and
 * long lines, against the reference splitter, for several max_line values
 * and all three codecs. */
static void test_random_against_model(void **state)
{
	struct fixture *f = *state;
	uint64_t x = 88172645463325252u;
	char plain[4096], gz[4096], zst[4096];
	snprintf(plain, sizeof plain, "%s", in_dir(f, "r.ndjson"));
	snprintf(gz, sizeof gz, "%s", in_dir(f, "r.ndjson.gz"));
	snprintf(zst, sizeof zst, "%s", in_dir(f, "r.ndjson.zst"));
	const size_t max_lines[] = {1, 7, 300, 4096, 0};

	for (int round = 0; round < 3; round++) {
		size_t cap = (size_t)3 << 20, n = 0;
		char *data = malloc(cap + 4096);
		while (n < cap) {
			x ^= x << 13, x ^= x >> 7, x ^= x << 17;
			size_t kind = x % 10, len;
			if (kind == 0)
				len = 0;
			else if (kind == 1)
				len = 2000 + x % 2100;
			else
				len = 1 + (x >> 8) % 400;
			for (size_t i = 0; i < len; i++)
				data[n + i] = (char)('!' + (x >> (i % 50)) % 90);
			n += len;
			if ((x >> 20) % 4 == 0)
				data[n++] = '\r';
			if ((x >> 22) % 16 == 0)
				data[n++] = ' ';
			data[n++] = '\n';
		}
		if (round == 1)
			n--; /* no final newline */
		keel_test_write_file(plain, data, n);
		compress_to("gzip", plain, gz);
		compress_to("zstd", plain, zst);
		for (size_t m = 0; m < sizeof max_lines / sizeof max_lines[0]; m++) {
			size_t ml = max_lines[m];
			char *want = split_model(data, n, ml ? ml : KEEL_DEFAULT_MAX_LINE);
			expect_file(plain, ml, want);
			expect_file(gz, ml, want);
			expect_file(zst, ml, want);
			free(want);
		}
		free(data);
	}
}

static void test_progress(void **state)
{
	struct fixture *f = *state;
	char plain[4096], gz[4096];
	snprintf(plain, sizeof plain, "%s", in_dir(f, "p.ndjson"));
	snprintf(gz, sizeof gz, "%s", in_dir(f, "p.ndjson.gz"));
	size_t n = (size_t)5 << 20;
	char *data = malloc(n);
	for (size_t i = 0; i < n; i++)
		data[i] = i % 100 == 99 ? '\n' : (char)('0' + (i * 7919) % 71);
	keel_test_write_file(plain, data, n);
	free(data);
	compress_to("gzip", plain, gz);
	size_t gz_size = 0;
	free(keel_test_read_file(gz, &gz_size));

	const char *paths[] = {plain, gz};
	const uint64_t sizes[] = {n, gz_size};
	for (int i = 0; i < 2; i++) {
		struct keel_reader *r = NULL;
		char *err = NULL;
		assert_int_equal(keel_reader_open(paths[i], 0, &r, &err), 0);
		uint64_t done = 1, total = 0, last = 0;
		keel_reader_progress(r, &done, &total);
		assert_int_equal(done, 0);
		assert_int_equal(total, sizes[i]);
		const char *line;
		size_t len;
		uint64_t lineno;
		bool too_long;
		int rc;
		bool moved_early = false;
		while ((rc = keel_reader_next(r, &line, &len, &lineno, &too_long)) == 1) {
			keel_reader_progress(r, &done, &total);
			assert_true(done >= last && done <= total);
			if (done < total)
				moved_early = moved_early || done > 0;
			last = done;
		}
		assert_int_equal(rc, 0);
		assert_int_equal(lineno, (n + 99) / 100);
		if (i == 0)
			assert_true(moved_early); /* progress moves before the end */
		keel_reader_progress(r, &done, &total);
		assert_int_equal(done, sizes[i]);
		keel_reader_close(r);
	}
}

static void test_open_errors(void **state)
{
	struct fixture *f = *state;
	struct keel_reader *r = (struct keel_reader *)1;
	char *err = NULL;
	char msg[8192];
	const char *p = in_dir(f, "missing.ndjson");
	assert_int_equal(keel_reader_open(p, 0, &r, &err), KEEL_EIO);
	assert_null(r);
	snprintf(msg, sizeof msg, "cannot open \"%s\": No such file or directory", p);
	assert_string_equal(err, msg);
	free(err);
	/* errmsg may be NULL. */
	assert_int_equal(keel_reader_open(p, 0, &r, NULL), KEEL_EIO);

	/* A directory opens but cannot be read. */
	snprintf(msg, sizeof msg, "cannot read \"%s\": Is a directory", f->dir);
	expect_error(f->dir, msg);
	keel_reader_close(NULL);
}

/* 200 000 bytes of lines of pseudo-random letters (seed picks them), so
 * that the compressed stream is long, compressed by tool into path; the
 * compressed bytes (malloc'd) and their length. */
static char *compressed_noise(struct fixture *f, const char *tool, uint64_t seed,
			      const char *path, size_t *len)
{
	char src[4096];
	snprintf(src, sizeof src, "%s", in_dir(f, "c.ndjson"));
	size_t n = 200000;
	char *data = malloc(n);
	uint64_t x = seed;
	for (size_t i = 0; i < n; i++) {
		x = x * 6364136223846793005u + 1442695040888963407u;
		data[i] = i % 80 == 79 ? '\n' : (char)('a' + (x >> 59));
	}
	keel_test_write_file(src, data, n);
	free(data);
	compress_to(tool, src, path);
	return keel_test_read_file(path, len);
}

/* Flips 16 bytes in the middle of a stream; a second call restores them. */
static void flip_middle(char *bytes, size_t len)
{
	for (size_t i = len / 2; i < len / 2 + 16; i++)
		bytes[i] = (char)~bytes[i];
}

static void test_corrupt_gzip(void **state)
{
	struct fixture *f = *state;
	char gz[4096], msg[8192];
	snprintf(gz, sizeof gz, "%s", in_dir(f, "c.gz"));
	size_t len;
	char *bytes = compressed_noise(f, "gzip", 1, gz, &len);

	/* Bytes flipped in the middle of the deflate stream. */
	flip_middle(bytes, len);
	keel_test_write_file(gz, bytes, len);
	snprintf(msg, sizeof msg, "\"%s\": corrupt gzip data at byte ", gz);
	expect_error(gz, msg);

	/* Cut short. */
	flip_middle(bytes, len);
	keel_test_write_file(gz, bytes, len - 10);
	snprintf(msg, sizeof msg, "\"%s\": truncated gzip data at byte ", gz);
	expect_error(gz, msg);

	/* Garbage after a complete member. */
	keel_test_write_file(gz, bytes, len);
	assert_int_equal(keel_test_sh("printf 'garbage' >> '%s'", gz), 0);
	snprintf(msg, sizeof msg, "\"%s\": corrupt gzip data at byte ", gz);
	expect_error(gz, msg);
	free(bytes);

	/* A .gz that is not gzip at all. */
	keel_test_write_file(gz, "{\"a\":1}\n", 8);
	snprintf(msg, sizeof msg, "\"%s\": not gzip data", gz);
	expect_error(gz, msg);
}

static void test_corrupt_zstd(void **state)
{
	struct fixture *f = *state;
	char zst[4096], msg[8192];
	snprintf(zst, sizeof zst, "%s", in_dir(f, "c.zst"));
	size_t len;
	char *bytes = compressed_noise(f, "zstd", 7, zst, &len);

	flip_middle(bytes, len);
	keel_test_write_file(zst, bytes, len);
	snprintf(msg, sizeof msg, "\"%s\": corrupt zstd data at byte ", zst);
	expect_error(zst, msg);

	flip_middle(bytes, len);
	keel_test_write_file(zst, bytes, len - 10);
	snprintf(msg, sizeof msg, "\"%s\": truncated zstd data at byte ", zst);
	expect_error(zst, msg);
	free(bytes);

	keel_test_write_file(zst, "{\"a\":1}\n", 8);
	snprintf(msg, sizeof msg, "\"%s\": not zstd data", zst);
	expect_error(zst, msg);
}

static void test_corrupt_stdin(void **state)
{
	(void)state;
	/* A gzip header followed by junk, through a pipe. */
	fflush(stdout);
	FILE *p = popen("printf '\\037\\213\\010\\000\\000\\000\\000\\000\\000\\003"
			"\\377\\377\\377\\377'",
			"r");
	assert_non_null(p);
	int saved = dup(STDIN_FILENO);
	assert_int_equal(dup2(fileno(p), STDIN_FILENO), STDIN_FILENO);
	struct keel_reader *r = NULL;
	char *err = NULL;
	assert_int_equal(keel_reader_open("-", 0, &r, &err), 0);
	struct text t = {0};
	assert_int_equal(transcribe(r, &t), KEEL_EIO);
	const char *msg = keel_reader_errmsg(r);
	assert_true(strncmp(msg, "stdin: corrupt gzip data at byte ", 33) == 0);
	keel_reader_close(r);
	free(t.s);
	assert_int_equal(dup2(saved, STDIN_FILENO), STDIN_FILENO);
	close(saved);
	pclose(p);
}

const struct CMUnitTest tests[] = {
    cmocka_unit_test_setup_teardown(test_plain_lines, setup, teardown),
    cmocka_unit_test_setup_teardown(test_crlf_and_final_line, setup, teardown),
    cmocka_unit_test_setup_teardown(test_blank_lines_counted, setup, teardown),
    cmocka_unit_test_setup_teardown(test_empty_inputs, setup, teardown),
    cmocka_unit_test_setup_teardown(test_bom_dropped, setup, teardown),
    cmocka_unit_test_setup_teardown(test_gzip, setup, teardown),
    cmocka_unit_test_setup_teardown(test_gzip_concatenated_members, setup, teardown),
    cmocka_unit_test_setup_teardown(test_zstd, setup, teardown),
    cmocka_unit_test_setup_teardown(test_stdin_pipe, setup, teardown),
    cmocka_unit_test_setup_teardown(test_sniff_plain_path, setup, teardown),
    cmocka_unit_test_setup_teardown(test_max_line_boundaries, setup, teardown),
    cmocka_unit_test_setup_teardown(test_ten_mib_line, setup, teardown),
    cmocka_unit_test_setup_teardown(test_random_against_model, setup, teardown),
    cmocka_unit_test_setup_teardown(test_progress, setup, teardown),
    cmocka_unit_test_setup_teardown(test_open_errors, setup, teardown),
    cmocka_unit_test_setup_teardown(test_corrupt_gzip, setup, teardown),
    cmocka_unit_test_setup_teardown(test_corrupt_zstd, setup, teardown),
    cmocka_unit_test(test_corrupt_stdin),
};

KEEL_TEST_MAIN(tests)
