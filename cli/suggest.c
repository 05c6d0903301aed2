/*
 * suggest.c - "did you mean": the nearest of some names to a mistyped one
 * (a command, a long option), as git's help.autocorrect list does.
 *
 * Nearness is the optimal string alignment distance (Levenshtein with
 * transpositions: "shwo" is one step from "show"). A name is suggested
 * when it is at most two steps away and at most half as many steps as the
 * typed word is long (so "x" does not become "why"), or when the word
 * begins it.
 */
#include "cli.h"

#include <stdlib.h>
#include <string.h>

/* The optimal string alignment distance between a and b (bytes). */
static size_t distance(const char *a, const char *b)
{
	size_t n = strlen(a), m = strlen(b);
	if (n > 64 || m > 64)
		return (size_t)-1; /* nothing a person mistypes */
	size_t d[65][65];
	for (size_t i = 0; i <= n; i++)
		d[i][0] = i;
	for (size_t j = 0; j <= m; j++)
		d[0][j] = j;
	for (size_t i = 1; i <= n; i++)
		for (size_t j = 1; j <= m; j++) {
			size_t cost = a[i - 1] != b[j - 1];
			size_t v = d[i - 1][j] + 1;
			if (d[i][j - 1] + 1 < v)
				v = d[i][j - 1] + 1;
			if (d[i - 1][j - 1] + cost < v)
				v = d[i - 1][j - 1] + cost;
			if (i > 1 && j > 1 && a[i - 1] == b[j - 2] &&
			    a[i - 2] == b[j - 1] && d[i - 2][j - 2] + 1 < v)
				v = d[i - 2][j - 2] + 1;
			d[i][j] = v;
		}
	return d[n][m];
}

const char *cli_nearest(const char *word, const char *const *names, size_t n)
{
	size_t len = strlen(word), best = (size_t)-1;
	const char *pick = NULL;
	for (size_t i = 0; i < n; i++) {
		size_t d = distance(word, names[i]);
		if (len && strncmp(names[i], word, len) == 0)
			d = 1; /* the start of the name */
		if (d < best) {
			best = d;
			pick = names[i];
		}
	}
	if (pick && best <= 2 && 2 * best <= len)
		return pick;
	return NULL;
}
