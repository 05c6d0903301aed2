/*
 * timestamp.c - RFC 3339 timestamps <-> int64 microseconds since the epoch
 * (docs/time-and-envelopes.md).
 *
 * The parser is a straight-line scan over the fixed layout
 * YYYY-MM-DDTHH:MM:SS[.f+](Z|+HH:MM|-HH:MM): it runs once per event, so it
 * does no allocation, no locale lookups and no libc time calls. It reads
 * left to right, each part's shape and then its values (each malformation
 * has its own message, a value out of range is named), and stops at the
 * first thing wrong, so the message for a given input never depends on
 * anything but the input.
 *
 * Calendar arithmetic is done here on the proleptic Gregorian calendar with
 * Howard Hinnant's days-from-civil algorithms, valid for any int64 day
 * count, so times before 1970 and offsets that cross a day, month or year
 * boundary need no special cases. Decisions (docs/time-and-envelopes.md):
 *  - 'T'/'t' separate date and time, 'Z'/'z' mean UTC (RFC 3339 section 5.6
 *    allows the lowercase forms); a space is rejected with its own message.
 *  - "-00:00" ("offset unknown") is read as UTC.
 *  - Fractions of any length are accepted; digits past the sixth are
 *    dropped (truncated, never rounded).
 *  - Both the written year and the instant in UTC must lie in 0001-9999, so
 *    every accepted time prints in the canonical form and parses back.
 */
#include "timestamp.h"

#include "keel.h"
#include "util.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#define USEC_PER_SEC INT64_C(1000000)
#define USEC_PER_MIN (60 * USEC_PER_SEC)
#define USEC_PER_DAY (86400 * USEC_PER_SEC)

int64_t keel_days_from_civil(int64_t y, int64_t m, int64_t d)
{
	y -= m <= 2;
	int64_t era = (y >= 0 ? y : y - 399) / 400;
	int64_t yoe = y - era * 400;
	int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

void keel_civil_from_days(int64_t z, int64_t *y, int64_t *m, int64_t *d)
{
	z += 719468;
	int64_t era = (z >= 0 ? z : z - 146096) / 146097;
	int64_t doe = z - era * 146097;
	int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	int64_t mp = (5 * doy + 2) / 153;
	*d = doy - (153 * mp + 2) / 5 + 1;
	*m = mp < 10 ? mp + 3 : mp - 9;
	*y = yoe + era * 400 + (*m <= 2);
}

static bool is_leap(int64_t y)
{
	return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

static int64_t days_in_month(int64_t y, int64_t m)
{
	static const unsigned char mdays[12] = {31, 28, 31, 30, 31, 30,
						31, 31, 30, 31, 30, 31};
	return m == 2 && is_leap(y) ? 29 : mdays[m - 1];
}

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* Reads n ASCII digits at p; -1 if any is not a digit. */
static int64_t read_digits(const char *p, int n)
{
	int64_t v = 0;
	for (int i = 0; i < n; i++) {
		if (!is_digit(p[i]))
			return -1;
		v = v * 10 + (p[i] - '0');
	}
	return v;
}

/* Bounds of the accepted range in UTC. */
#define TIME_MIN (keel_days_from_civil(1, 1, 1) * USEC_PER_DAY)
#define TIME_MAX (keel_days_from_civil(10000, 1, 1) * USEC_PER_DAY - 1)

static int fail(const char **why, const char *rule)
{
	if (why)
		*why = rule;
	return KEEL_EINVAL;
}

#define BYTES(c) (UINT64_C(0x0101010101010101) * (c))

/* Are the bytes of w inside mask equal to seps and all others ASCII
 * digits? If so, returns true and in *v the digits' values, one a byte
 * (0 for a separator). */
static inline bool word_digits(uint64_t w, uint64_t mask, uint64_t seps, uint64_t *v)
{
	if ((w & mask) != seps)
		return false;
	w = (w & ~mask) | (BYTES('0') & mask);
	/* 0x30-0x3f, and still below 0x40 after adding 6: '0'-'9' */
	if ((w & BYTES(0xf0)) != BYTES(0x30) ||
	    ((w + BYTES(6)) & BYTES(0xf0)) != BYTES(0x30))
		return false;
	*v = w - BYTES('0');
	return true;
}

/* Digits i and i + 1 of a word from word_digits as a number. */
static inline uint32_t two_digits(uint64_t v, int i)
{
	return (uint32_t)((v >> (8 * i)) & 0xff) * 10 +
	       (uint32_t)((v >> (8 * i + 8)) & 0xff);
}

/* Days from 1970-01-01 to y-m-d for years 1-9999 (keel_days_from_civil in
 * unsigned arithmetic, whose divisions compile to multiplications). */
static inline int64_t days_from_civil_ad(uint32_t y, uint32_t m, uint32_t d)
{
	y -= m <= 2;
	uint32_t era = y / 400, yoe = y % 400;
	uint32_t doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
	uint32_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return (int64_t)era * 146097 + (int64_t)doe - 719468;
}

/* The form nearly every producer writes, YYYY-MM-DDTHH:MM:SSZ with no or
 * six fraction digits, read a word at a time: one event parses a timestamp,
 * and the general scan below costs several times as much. Returns false
 * for anything else, valid or not, and for values out of range, so that the
 * general scan decides and names the rule broken; the instant is the one
 * the general scan computes. */
/* The day the usual form read last, per thread: a stream's consecutive
 * events mostly share their day, whose checks and calendar arithmetic are
 * then skipped. Only a valid date is kept (set). */
static _Thread_local struct {
	uint64_t date; /* "YYYY-MM-" as word_at reads it */
	uint16_t day;  /* "DD" */
	bool set;
	int64_t days; /* days_from_civil of the date */
} last_day;

static bool time_parse_usual(const char *s, size_t len, int64_t *out)
{
	uint64_t clock, frac = 0;
	if ((len != 20 && len != 27) || !s || s[len - 1] != 'Z' || s[10] != 'T')
		return false;
	/* "HH:MM:SS" and ".ffffffZ" */
	if (!word_digits(keel_le64(s + 11), UINT64_C(0x0000ff0000ff0000),
			 ((uint64_t)':' << 40) | ((uint64_t)':' << 16), &clock))
		return false;
	if (len == 27 && !word_digits(keel_le64(s + 19), UINT64_C(0xff000000000000ff),
				      ((uint64_t)'Z' << 56) | (uint64_t)'.', &frac))
		return false;
	uint32_t hour = two_digits(clock, 0), min = two_digits(clock, 3),
		 sec = two_digits(clock, 6);
	uint32_t usec = ((two_digits(frac, 1) * 100) + two_digits(frac, 3)) * 100 +
			two_digits(frac, 5);
	if (hour > 23 || min > 59 || sec > 59)
		return false;
	/* "YYYY-MM-" then "DD": the last day again, or checked in full */
	uint64_t word = keel_le64(s), date;
	uint16_t dd;
	memcpy(&dd, s + 8, 2);
	if (!last_day.set || word != last_day.date || dd != last_day.day) {
		if (!word_digits(word, UINT64_C(0xff0000ff00000000),
				 ((uint64_t)'-' << 56) | ((uint64_t)'-' << 32), &date))
			return false;
		uint32_t d0 = (uint32_t)(unsigned char)s[8] - '0',
			 d1 = (uint32_t)(unsigned char)s[9] - '0';
		if (d0 > 9 || d1 > 9)
			return false;
		uint32_t year = two_digits(date, 0) * 100 + two_digits(date, 2);
		uint32_t mon = two_digits(date, 5), day = d0 * 10 + d1;
		if (year < 1 || mon < 1 || mon > 12 || day < 1 ||
		    day > (uint32_t)days_in_month(year, mon))
			return false;
		last_day.date = word;
		last_day.day = dd;
		last_day.days = days_from_civil_ad(year, mon, day);
		last_day.set = true;
	}
	/* years 1-9999 in UTC: always in range */
	*out = last_day.days * USEC_PER_DAY +
	       (int64_t)((hour * 60 + min) * 60 + sec) * USEC_PER_SEC + usec;
	return true;
}

/* The message of a value out of its range, naming the value: formatted
 * into a per-thread buffer (keel.h: valid until the thread's next parse). */
static _Thread_local char why_buf[96];

static int fail_value(const char **why, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static int fail_value(const char **why, const char *fmt, ...)
{
	if (why) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(why_buf, sizeof why_buf, fmt, ap);
		va_end(ap);
		*why = why_buf;
	}
	return KEEL_EINVAL;
}

int keel_time_parse(const char *s, size_t len, int64_t *out, const char **why)
{
	static const char bad[] = "not an RFC 3339 timestamp";
	if (time_parse_usual(s, len, out))
		return 0;
	int64_t year, mon, day, hour, min, sec, usec = 0, off = 0;

	/* Date: YYYY-MM-DD, its shape and then its values, so that a date
	 * alone (a --at of 2026-13-01) is told what is wrong with the date
	 * before being told the time of day is missing. */
	if (!s || len < 10 || s[4] != '-' || s[7] != '-')
		return fail(why, bad);
	year = read_digits(s, 4);
	mon = read_digits(s + 5, 2);
	day = read_digits(s + 8, 2);
	if (year < 0 || mon < 0 || day < 0)
		return fail(why, bad);
	if (year < 1)
		return fail_value(why, "year %04d out of range 0001-9999", (int)year);
	if (mon < 1 || mon > 12)
		return fail_value(why, "month %02d out of range 01-12", (int)mon);
	if (day < 1 || day > days_in_month(year, mon))
		return fail_value(why, "day %02d out of range for %04d-%02d (01-%02d)",
				  (int)day, (int)year, (int)mon,
				  (int)days_in_month(year, mon));
	if (len == 10)
		return fail_value(
		    why, "missing time of day and zone (midnight UTC: %.10sT00:00:00Z)",
		    s);
	if (s[10] == ' ')
		return fail(why, "date and time must be separated by 'T'");
	if (s[10] != 'T' && s[10] != 't')
		return fail(why, bad);

	/* Time: HH:MM:SS, its values, then an optional fraction. */
	if (len < 19 || s[13] != ':' || s[16] != ':')
		return fail(why, bad);
	hour = read_digits(s + 11, 2);
	min = read_digits(s + 14, 2);
	sec = read_digits(s + 17, 2);
	if (hour < 0 || min < 0 || sec < 0)
		return fail(why, bad);
	if (hour > 23)
		return fail_value(why, "hour %02d out of range 00-23", (int)hour);
	if (min > 59)
		return fail_value(why, "minute %02d out of range 00-59", (int)min);
	if (sec == 60)
		return fail(why, "leap seconds are not supported");
	if (sec > 59)
		return fail_value(why, "second %02d out of range 00-59", (int)sec);
	size_t i = 19;
	if (i < len && s[i] == '.') {
		i++;
		if (i >= len || !is_digit(s[i]))
			return fail(why, "fractional seconds need a digit after '.'");
		int ndig = 0;
		for (; i < len && is_digit(s[i]); i++, ndig++) {
			if (ndig < 6)
				usec = usec * 10 + (s[i] - '0');
		}
		for (; ndig < 6; ndig++)
			usec *= 10;
	}

	/* Zone offset. */
	if (i >= len)
		return fail(why, "missing zone offset");
	if (s[i] == 'Z' || s[i] == 'z') {
		i++;
	} else if (s[i] == '+' || s[i] == '-') {
		if (len - i < 6 || s[i + 3] != ':')
			return fail(why, "zone offset must be Z, +HH:MM or -HH:MM");
		int64_t oh = read_digits(s + i + 1, 2);
		int64_t om = read_digits(s + i + 4, 2);
		if (oh < 0 || om < 0)
			return fail(why, "zone offset must be Z, +HH:MM or -HH:MM");
		if (oh > 23 || om > 59)
			return fail_value(why, "zone offset %.6s out of range", s + i);
		off = (oh * 60 + om) * (s[i] == '-' ? -1 : 1);
		i += 6;
	} else {
		return fail(why, "missing zone offset");
	}
	if (i != len)
		return fail(why, "unexpected characters after the zone offset");

	int64_t t = keel_days_from_civil(year, mon, day) * USEC_PER_DAY +
		    ((hour * 60 + min) * 60 + sec) * USEC_PER_SEC + usec -
		    off * USEC_PER_MIN;
	if (t < TIME_MIN || t > TIME_MAX)
		return fail(why, "time out of range 0001-9999 in UTC");
	*out = t;
	return 0;
}

/* Writes v as exactly n digits (v >= 0, v < 10^n). */
static char *put_digits(char *p, int64_t v, int n)
{
	for (int i = n - 1; i >= 0; i--) {
		p[i] = (char)('0' + v % 10);
		v /= 10;
	}
	return p + n;
}

size_t keel_time_format(int64_t t, char *buf)
{
	char *p = buf;

	if (t == KEEL_TIME_INF) {
		memcpy(buf, "null", 5);
		return 4;
	}
	/* Floor division, so times before 1970 count back from a day start. */
	int64_t days = t / USEC_PER_DAY, rem = t % USEC_PER_DAY;
	if (rem < 0) {
		days--;
		rem += USEC_PER_DAY;
	}
	int64_t y, m, d;
	keel_civil_from_days(days, &y, &m, &d);

	/* Years outside 0001-9999 only arise from times Keel did not parse;
	 * they still print unambiguously (sign, at least four digits). */
	if (y < 0) {
		*p++ = '-';
		y = -y;
	}
	int ydig = 4;
	for (int64_t lim = 10000; y >= lim && ydig < 18; lim *= 10)
		ydig++;
	p = put_digits(p, y, ydig);
	*p++ = '-';
	p = put_digits(p, m, 2);
	*p++ = '-';
	p = put_digits(p, d, 2);
	*p++ = 'T';
	int64_t secs = rem / USEC_PER_SEC, usec = rem % USEC_PER_SEC;
	p = put_digits(p, secs / 3600, 2);
	*p++ = ':';
	p = put_digits(p, secs / 60 % 60, 2);
	*p++ = ':';
	p = put_digits(p, secs % 60, 2);
	if (usec) {
		*p++ = '.';
		p = put_digits(p, usec, 6);
	}
	*p++ = 'Z';
	*p = 0;
	return (size_t)(p - buf);
}

int64_t keel_time_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * USEC_PER_SEC + ts.tv_nsec / 1000;
}

int keel_time_parse_at(const char *s, size_t len, int64_t *out, const char **why)
{
	/* The one place "now" is understood: --at on the command line and
	 * ?at= over HTTP must mean the same thing (docs/cli.md). Events never
	 * come here; their "time" is RFC 3339 only. */
	if (len == 3 && memcmp(s, "now", 3) == 0) {
		if (why)
			*why = NULL;
		*out = keel_time_now();
		return 0;
	}
	return keel_time_parse(s, len, out, why);
}
