/*
 * stream.h - live input for keel ingest: lines read on a thread so that
 * the ingesting thread can wait for the next line with a timeout (to
 * commit a lingering batch when the input goes quiet), and a follower that
 * keeps reading a file as it grows (tail -f) and feeds it to a reader
 * through a pipe.
 *
 * Both sit on the public reader API unchanged: keel_reader_next may block
 * as long as it likes on its own thread.
 */
#ifndef KEEL_CLI_STREAM_H
#define KEEL_CLI_STREAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "keel.h"

struct cli_stream;

struct cli_line {
	char *text; /* owned by the stream until the next call */
	size_t len;
	uint64_t lineno;
	bool too_long;
};

/* Starts reading r (borrowed; it must outlive the stream) on a thread. */
struct cli_stream *cli_stream_start(struct keel_reader *r);
/* Waits up to timeout_ms for the next line. Returns 1 with *out set, 0 if
 * none arrived in time, -1 at the end of the input, -2 on a read error
 * (cli_stream_errmsg). */
int cli_stream_next(struct cli_stream *st, int timeout_ms, struct cli_line *out);
const char *cli_stream_errmsg(const struct cli_stream *st);
/* Ends the stream. If the reading thread is blocked in a read it is left
 * to the process's exit; returns true when the thread has finished, so
 * that the reader may be closed. */
bool cli_stream_stop(struct cli_stream *st);

struct cli_follow;

/* Follows path from its start: returns the read end of a pipe carrying
 * the file's bytes as they are written (in *fd), or NULL with a message in
 * *err (malloc'd). A file that shrinks is read again from its start (with
 * a note on stderr). */
struct cli_follow *cli_follow_start(const char *path, int *fd, char **err);
/* Stops following; the thread closes the pipe and ends on its own. */
void cli_follow_stop(struct cli_follow *f);

#endif
