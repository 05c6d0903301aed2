/*
 * spill.h - sorting more fixed-size records than memory should hold
 * (keel replay, docs/replay.md): records gather in a buffer of a fixed
 * size; each time it fills it is sorted and written to a temporary file
 * as one run, and reading merges the runs through read buffers that
 * share the buffer's size. Memory stays the buffer, whatever the number
 * of records.
 */
#ifndef KEEL_SPILL_H
#define KEEL_SPILL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef int (*keel_spill_cmp)(const void *a, const void *b);

struct keel_spill_run;

struct keel_spill {
	size_t rec;	     /* bytes a record */
	keel_spill_cmp cmp;
	unsigned char *buf;  /* the records not yet in a run */
	size_t n, cap;	     /* records in buf, and its capacity */
	int fd;		     /* the runs, one after another (-1: none yet) */
	uint64_t written;    /* bytes in the file */
	struct keel_spill_run *runs;
	size_t nruns, runs_cap;
	size_t *heap;	     /* reading: runs by their next record */
	size_t nheap;
	size_t pos;	     /* reading from buf alone: the next record */
	size_t readsz;	     /* reading the runs: bytes read at once from each */
	uint64_t count;	     /* records added */
	char err[160];
};

/* budget: bytes of the in-memory buffer (at least one record). */
void keel_spill_init(struct keel_spill *sp, size_t rec, keel_spill_cmp cmp,
		     size_t budget);
void keel_spill_free(struct keel_spill *sp);
/* 0, or -1 with sp->err set (the temporary file could not be written). */
int keel_spill_add(struct keel_spill *sp, const void *rec);
/* Ends the adding: what follows reads the records in order. 0 or -1. */
int keel_spill_sort(struct keel_spill *sp);
/* Copies the next record into out: 1, 0 at the end, -1 on a read error. */
int keel_spill_next(struct keel_spill *sp, void *out);

/* A temporary file under $TMPDIR (else /tmp), already unlinked: its
 * descriptor, or -1 with err set. */
int keel_spill_tmpfile(char *err, size_t errlen);

#endif
