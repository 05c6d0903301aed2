/*
 * test_time.c - RFC 3339 parsing and canonical formatting (src/event/timestamp.c).
 *
 * Expected instants are either worked out by hand (epoch seconds quoted in
 * the cases) or taken from glibc's timegm, an independent implementation of
 * the same calendar arithmetic.
 */
#include "support.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "event/timestamp.h"

#define SEC INT64_C(1000000)
#define DAY (86400 * SEC)

static int64_t parse_ok(const char *s)
{
	int64_t t = 42;
	const char *why = NULL;
	int rc = keel_time_parse(s, strlen(s), &t, &why);
	if (rc != 0)
		fail_msg("\"%s\" rejected: %s", s, why ? why : "(no reason)");
	assert_null(why);
	return t;
}

static void parse_fails(const char *s, const char *expected_why)
{
	int64_t t = 42;
	const char *why = NULL;
	int rc = keel_time_parse(s, strlen(s), &t, &why);
	if (rc != KEEL_EINVAL)
		fail_msg("\"%s\" accepted as %lld", s, (long long)t);
	assert_int_equal(t, 42); /* *out untouched on failure */
	assert_non_null(why);
	assert_string_equal(why, expected_why);
	/* why is optional */
	assert_int_equal(keel_time_parse(s, strlen(s), &t, NULL), KEEL_EINVAL);
}

static void format_is(int64_t t, const char *expected)
{
	char buf[KEEL_TIME_BUFSZ];
	memset(buf, 'x', sizeof buf);
	size_t n = keel_time_format(t, buf);
	assert_string_equal(buf, expected);
	assert_int_equal(n, strlen(expected));
}

/* glibc's timegm as the oracle for y-m-d h:m:s UTC. */
static int64_t oracle(int y, int mo, int d, int h, int mi, int s)
{
	struct tm tm = {0};
	tm.tm_year = y - 1900;
	tm.tm_mon = mo - 1;
	tm.tm_mday = d;
	tm.tm_hour = h;
	tm.tm_min = mi;
	tm.tm_sec = s;
	return (int64_t)timegm(&tm) * SEC;
}

static void test_parse_known_instants(void **state)
{
	(void)state;
	assert_int_equal(parse_ok("1970-01-01T00:00:00Z"), 0);
	assert_int_equal(parse_ok("2000-01-01T00:00:00Z"), 946684800 * SEC);
	assert_int_equal(parse_ok("2024-02-29T00:00:00Z"), 1709164800 * SEC);
	assert_int_equal(parse_ok("1969-12-31T23:59:59Z"), -SEC);
	assert_int_equal(parse_ok("1900-03-01T00:00:00Z"), INT64_C(-2203891200) * SEC);
	assert_int_equal(parse_ok("2024-05-06T07:08:09Z"), oracle(2024, 5, 6, 7, 8, 9));
}

static void test_parse_lowercase_separators(void **state)
{
	(void)state;
	int64_t upper = parse_ok("2024-05-06T07:08:09Z");
	assert_int_equal(parse_ok("2024-05-06t07:08:09Z"), upper);
	assert_int_equal(parse_ok("2024-05-06T07:08:09z"), upper);
	assert_int_equal(parse_ok("2024-05-06t07:08:09z"), upper);
}

static void test_parse_fraction(void **state)
{
	(void)state;
	int64_t base = parse_ok("2024-05-06T07:08:09Z");
	assert_int_equal(parse_ok("2024-05-06T07:08:09.5Z"), base + 500000);
	assert_int_equal(parse_ok("2024-05-06T07:08:09.05Z"), base + 50000);
	assert_int_equal(parse_ok("2024-05-06T07:08:09.000001Z"), base + 1);
	assert_int_equal(parse_ok("2024-05-06T07:08:09.123456Z"), base + 123456);
	assert_int_equal(parse_ok("2024-05-06T07:08:09.000000Z"), base);
	/* Digits past the sixth are truncated, never rounded. */
	assert_int_equal(parse_ok("2024-05-06T07:08:09.123456789Z"), base + 123456);
	assert_int_equal(parse_ok("2024-05-06T07:08:09.9999999Z"), base + 999999);
	assert_int_equal(parse_ok("2024-05-06T07:08:09.0000009+00:00"), base);
	assert_int_equal(parse_ok("2024-05-06T07:08:09.12345678901234567890123456789Z"),
			 base + 123456);
	/* Before 1970 the fraction still counts forward from the second. */
	assert_int_equal(parse_ok("1969-12-31T23:59:59.25Z"), -SEC + 250000);
}

static void test_parse_offsets(void **state)
{
	(void)state;
	int64_t utc = parse_ok("2024-05-06T07:08:09Z");
	assert_int_equal(parse_ok("2024-05-06T07:08:09+00:00"), utc);
	/* "-00:00" means "offset unknown" in RFC 3339: read as UTC. */
	assert_int_equal(parse_ok("2024-05-06T07:08:09-00:00"), utc);
	assert_int_equal(parse_ok("2024-05-06T12:38:09+05:30"), utc);
	assert_int_equal(parse_ok("2024-05-05T23:08:09-08:00"), utc);
	assert_int_equal(parse_ok("2024-05-06T07:08:09+23:59"),
			 utc - (23 * 60 + 59) * 60 * SEC);
	/* Offsets crossing a day, a leap day and a year. */
	assert_int_equal(parse_ok("2024-03-01T01:00:00+02:00"),
			 parse_ok("2024-02-29T23:00:00Z"));
	assert_int_equal(parse_ok("2023-12-31T22:00:00-03:00"),
			 parse_ok("2024-01-01T01:00:00Z"));
	assert_int_equal(parse_ok("1970-01-01T00:00:00+01:00"), -3600 * SEC);
}

static void test_parse_boundaries(void **state)
{
	(void)state;
	int64_t lo = parse_ok("0001-01-01T00:00:00Z");
	assert_int_equal(lo, INT64_C(-62135596800) * SEC);
	assert_int_equal(lo, oracle(1, 1, 1, 0, 0, 0));
	int64_t hi = parse_ok("9999-12-31T23:59:59.999999Z");
	assert_int_equal(hi, INT64_C(253402300799) * SEC + 999999);
	/* Offsets that keep the instant in range. */
	assert_int_equal(parse_ok("0001-01-01T00:00:00-01:00"), lo + 3600 * SEC);
	assert_int_equal(parse_ok("9999-12-31T23:59:59+01:00"), hi - 999999 - 3600 * SEC);
	/* The written year and the UTC instant must both be in range. */
	parse_fails("0000-12-31T23:59:59Z", "year 0000 out of range 0001-9999");
	parse_fails("0001-01-01T00:00:00+00:01", "time out of range 0001-9999 in UTC");
	parse_fails("0001-01-01T00:59:59.999999+01:00",
		    "time out of range 0001-9999 in UTC");
	parse_fails("9999-12-31T23:59:59-00:01", "time out of range 0001-9999 in UTC");
	parse_fails("9999-12-31T23:00:00-01:00", "time out of range 0001-9999 in UTC");
}

static void test_parse_calendar(void **state)
{
	(void)state;
	/* Leap years: divisible by 4, except centuries not divisible by 400. */
	parse_ok("2024-02-29T00:00:00Z");
	parse_ok("2000-02-29T00:00:00Z");
	parse_ok("0004-02-29T00:00:00Z");
	parse_fails("2023-02-29T00:00:00Z", "day 29 out of range for 2023-02 (01-28)");
	parse_fails("1900-02-29T00:00:00Z", "day 29 out of range for 1900-02 (01-28)");
	parse_fails("2100-02-29T00:00:00Z", "day 29 out of range for 2100-02 (01-28)");
	parse_fails("2024-02-30T00:00:00Z", "day 30 out of range for 2024-02 (01-29)");
	parse_fails("2024-04-31T00:00:00Z", "day 31 out of range for 2024-04 (01-30)");
	parse_fails("2024-06-31T00:00:00Z", "day 31 out of range for 2024-06 (01-30)");
	parse_fails("2024-09-31T00:00:00Z", "day 31 out of range for 2024-09 (01-30)");
	parse_fails("2024-11-31T00:00:00Z", "day 31 out of range for 2024-11 (01-30)");
	parse_fails("2024-01-32T00:00:00Z", "day 32 out of range for 2024-01 (01-31)");
	parse_fails("2024-01-00T00:00:00Z", "day 00 out of range for 2024-01 (01-31)");
	parse_ok("2024-01-31T00:00:00Z");
	parse_ok("2024-12-31T00:00:00Z");
	parse_fails("2024-13-01T00:00:00Z", "month 13 out of range 01-12");
	parse_fails("2024-00-01T00:00:00Z", "month 00 out of range 01-12");
	parse_fails("2024-01-01T24:00:00Z", "hour 24 out of range 00-23");
	parse_fails("2024-01-01T23:60:00Z", "minute 60 out of range 00-59");
	parse_fails("2024-01-01T23:59:60Z", "leap seconds are not supported");
	parse_fails("2016-12-31T23:59:60Z", "leap seconds are not supported");
	parse_fails("2024-01-01T23:59:61Z", "second 61 out of range 00-59");
	parse_fails("2024-01-01T23:59:99Z", "second 99 out of range 00-59");
	/* Ranges are checked in the order they are written. */
	parse_fails("0000-13-32T25:61:61Z", "year 0000 out of range 0001-9999");
	parse_fails("2024-13-32T25:61:61Z", "month 13 out of range 01-12");
	parse_fails("2024-02-30T25:61:61Z", "day 30 out of range for 2024-02 (01-29)");
	parse_fails("2024-02-28T25:61:61Z", "hour 25 out of range 00-23");
}

static void test_parse_shape(void **state)
{
	(void)state;
	const char *bad = "not an RFC 3339 timestamp";
	parse_fails("", bad);
	parse_fails("now", bad);
	parse_fails("2024", bad);
	parse_fails("2024-1-01T00:00:00Z", bad);
	parse_fails("24-01-01T00:00:00Z", bad);
	parse_fails("20240-01-01T00:00:00Z", bad);
	parse_fails("2024/01/01T00:00:00Z", bad);
	parse_fails("2024-01-01X00:00:00Z", bad);
	parse_fails("2024-01-01T00:00Z", bad);
	parse_fails("2024-01-01T0:00:00Z", bad);
	parse_fails("2024-01-01T00.00.00Z", bad);
	parse_fails("+2024-01-01T00:00:00Z", bad);
	parse_fails("2024-0a-01T00:00:00Z", bad);
	parse_fails("1700000000", bad);
	parse_fails("2024-01-01",
		    "missing time of day and zone (midnight UTC: 2024-01-01T00:00:00Z)");
	/* Left to right: a date alone is told what is wrong with the date
	 * before that its time of day is missing, a time of day what is wrong
	 * with it before that its shape is short. */
	parse_fails("2026-13-01", "month 13 out of range 01-12");
	parse_fails("2026-02-29", "day 29 out of range for 2026-02 (01-28)");
	parse_fails("2026-01-05T25:00:00", "hour 25 out of range 00-23");
	parse_fails("2024-01-01 00:00:00Z", "date and time must be separated by 'T'");
	parse_fails("2024-01-01T00:00:00", "missing zone offset");
	parse_fails("2024-01-01T00:00:00.123", "missing zone offset");
	parse_fails("2024-01-01T00:00:00 Z", "missing zone offset");
	parse_fails("2024-01-01T00:00:00.Z", "fractional seconds need a digit after '.'");
	parse_fails("2024-01-01T00:00:00.", "fractional seconds need a digit after '.'");
	parse_fails("2024-01-01T00:00:00+0530",
		    "zone offset must be Z, +HH:MM or -HH:MM");
	parse_fails("2024-01-01T00:00:00+05", "zone offset must be Z, +HH:MM or -HH:MM");
	parse_fails("2024-01-01T00:00:00+5:30",
		    "zone offset must be Z, +HH:MM or -HH:MM");
	parse_fails("2024-01-01T00:00:00+05:3x",
		    "zone offset must be Z, +HH:MM or -HH:MM");
	parse_fails("2024-01-01T00:00:00+24:00", "zone offset +24:00 out of range");
	parse_fails("2024-01-01T00:00:00-05:60", "zone offset -05:60 out of range");
	parse_fails("2024-01-01T00:00:00ZZ",
		    "unexpected characters after the zone offset");
	parse_fails("2024-01-01T00:00:00+01:00 ",
		    "unexpected characters after the zone offset");
	parse_fails("2024-01-01T00:00:00Z\n",
		    "unexpected characters after the zone offset");
}

static void test_parse_uses_len_only(void **state)
{
	(void)state;
	int64_t t;
	const char *why = NULL;
	/* The input need not be NUL-terminated; bytes past len are ignored. */
	const char text[] = "2024-05-06T07:08:09Zgarbage";
	assert_int_equal(keel_time_parse(text, 20, &t, &why), 0);
	assert_int_equal(t, parse_ok("2024-05-06T07:08:09Z"));
	char exact[20];
	memcpy(exact, "2024-05-06T07:08:09Z", 20);
	assert_int_equal(keel_time_parse(exact, sizeof exact, &t, &why), 0);
	/* A length that cuts the offset off is caught. */
	assert_int_equal(keel_time_parse(text, 19, &t, &why), KEEL_EINVAL);
	assert_string_equal(why, "missing zone offset");
	assert_int_equal(keel_time_parse(NULL, 0, &t, &why), KEEL_EINVAL);
	assert_string_equal(why, "not an RFC 3339 timestamp");
}

/* The usual forms (YYYY-MM-DDTHH:MM:SSZ, with no or six fraction digits)
 * are read by a shortcut: the same instants as the other ways of writing
 * them, and anything of their length that is not valid gets the general
 * scan's verdict. */
static void test_parse_usual_form(void **state)
{
	(void)state;
	int64_t t = parse_ok("2026-01-05T06:00:00.079558Z");
	assert_int_equal(t, oracle(2026, 1, 5, 6, 0, 0) + 79558);
	assert_int_equal(t, parse_ok("2026-01-05T06:00:00.0795580Z"));
	assert_int_equal(t, parse_ok("2026-01-05t06:00:00.079558Z"));
	assert_int_equal(t, parse_ok("2026-01-05T07:00:00.079558+01:00"));
	assert_int_equal(parse_ok("2024-02-29T23:59:59Z"),
			 oracle(2024, 2, 29, 23, 59, 59));
	assert_int_equal(parse_ok("2024-02-29T23:59:59.999999Z"),
			 oracle(2024, 2, 29, 23, 59, 59) + 999999);
	assert_int_equal(parse_ok("0001-01-01T00:00:00.000000Z"),
			 parse_ok("0001-01-01T00:00:00Z"));
	assert_int_equal(parse_ok("9999-12-31T23:59:59.999999Z"),
			 INT64_C(253402300799999999));
	parse_fails("0000-01-01T00:00:00Z", "year 0000 out of range 0001-9999");
	parse_fails("2023-02-29T00:00:00Z", "day 29 out of range for 2023-02 (01-28)");
	parse_fails("2026-00-05T06:00:00.079558Z", "month 00 out of range 01-12");
	parse_fails("2026-01-00T06:00:00Z", "day 00 out of range for 2026-01 (01-31)");
	parse_fails("2026-01-05T24:00:00.000000Z", "hour 24 out of range 00-23");
	parse_fails("2026-01-05T06:60:00Z", "minute 60 out of range 00-59");
	parse_fails("2026-01-05T06:00:60.000000Z", "leap seconds are not supported");
	parse_fails("2026-01-05T06:00:00.07955xZ", "missing zone offset");
	parse_fails("2026-01-05T06:00:00.079558z0",
		    "unexpected characters after the zone offset");
	parse_fails("2026-01-05T06:00:0/Z", "not an RFC 3339 timestamp");
	parse_fails("2026-01-05T06:00:00:079558Z", "missing zone offset");
	parse_fails("2026/01-05T06:00:00Z", "not an RFC 3339 timestamp");
	parse_fails("2026-01-0:T06:00:00Z", "not an RFC 3339 timestamp");
}

static void test_format_canonical(void **state)
{
	(void)state;
	format_is(0, "1970-01-01T00:00:00Z");
	format_is(1, "1970-01-01T00:00:00.000001Z");
	format_is(500000, "1970-01-01T00:00:00.500000Z");
	format_is(946684800 * SEC, "2000-01-01T00:00:00Z");
	format_is(1709164800 * SEC + 123456, "2024-02-29T00:00:00.123456Z");
	format_is(KEEL_TIME_INF, "null");
	format_is(INT64_C(-62135596800) * SEC, "0001-01-01T00:00:00Z");
	format_is(INT64_C(253402300799) * SEC + 999999, "9999-12-31T23:59:59.999999Z");
}

static void test_format_negative(void **state)
{
	(void)state;
	format_is(-1, "1969-12-31T23:59:59.999999Z");
	format_is(-SEC, "1969-12-31T23:59:59Z");
	format_is(-DAY, "1969-12-31T00:00:00Z");
	format_is(-DAY - 1, "1969-12-30T23:59:59.999999Z");
	format_is(-DAY + 1, "1969-12-31T00:00:00.000001Z");
	format_is(INT64_C(-2203891200) * SEC, "1900-03-01T00:00:00Z");
	format_is(INT64_C(-2203891200) * SEC - 1, "1900-02-28T23:59:59.999999Z");
	format_is(oracle(1601, 1, 1, 0, 0, 0), "1601-01-01T00:00:00Z");
	format_is(oracle(1000, 2, 28, 12, 30, 45) + 7, "1000-02-28T12:30:45.000007Z");
}

static void test_format_out_of_range(void **state)
{
	(void)state;
	char buf[KEEL_TIME_BUFSZ];
	/* Times Keel would never parse still print without overflowing. */
	format_is(INT64_C(-62135596800) * SEC - 1, "0000-12-31T23:59:59.999999Z");
	format_is(INT64_C(253402300800) * SEC, "10000-01-01T00:00:00Z");
	size_t n = keel_time_format(INT64_MIN, buf);
	assert_true(n < KEEL_TIME_BUFSZ);
	assert_int_equal(buf[0], '-');
	assert_int_equal(strlen(buf), n);
	n = keel_time_format(INT64_MAX - 1, buf);
	assert_true(n < KEEL_TIME_BUFSZ);
	assert_string_equal(buf, "294247-01-10T04:00:54.775806Z");
}

/* Every day from 0001 to 9999 formats as timegm sees it and parses back. */
static void test_every_day_against_timegm(void **state)
{
	(void)state;
	int64_t first = parse_ok("0001-01-01T00:00:00Z");
	int64_t last = parse_ok("9999-12-31T00:00:00Z");
	char buf[KEEL_TIME_BUFSZ];
	int prev_y = 0, prev_m = 0, prev_d = 0;
	for (int64_t t = first; t <= last; t += DAY) {
		size_t n = keel_time_format(t, buf);
		assert_int_equal(n, 20);
		int64_t back;
		assert_int_equal(keel_time_parse(buf, n, &back, NULL), 0);
		assert_int_equal(back, t);
		int y = (int)strtol(buf, NULL, 10);
		int m = (int)strtol(buf + 5, NULL, 10);
		int d = (int)strtol(buf + 8, NULL, 10);
		/* Consecutive days: the date advances by exactly one. */
		if (prev_y) {
			bool next_day = y == prev_y && m == prev_m && d == prev_d + 1;
			bool next_month = y == prev_y && m == prev_m + 1 && d == 1;
			bool next_year = y == prev_y + 1 && m == 1 && d == 1 &&
					 prev_m == 12 && prev_d == 31;
			assert_true(next_day || next_month || next_year);
		}
		prev_y = y, prev_m = m, prev_d = d;
		if ((t / DAY) % 17 == 0)
			assert_int_equal(oracle(y, m, d, 0, 0, 0), t);
	}
	assert_int_equal(prev_y, 9999);
}

/* Random instants in range round-trip exactly, with any offset. */
static void test_round_trip_random(void **state)
{
	(void)state;
	int64_t lo = parse_ok("0001-01-01T00:00:00Z");
	int64_t hi = parse_ok("9999-12-31T23:59:59.999999Z");
	uint64_t x = 0x9e3779b97f4a7c15u;
	char buf[KEEL_TIME_BUFSZ], shifted[64];
	for (int i = 0; i < 200000; i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		int64_t t = lo + (int64_t)(x % (uint64_t)(hi - lo + 1));
		if (i % 3 == 0)
			t -= t % SEC; /* whole seconds print without a fraction */
		size_t n = keel_time_format(t, buf);
		int64_t back;
		assert_int_equal(keel_time_parse(buf, n, &back, NULL), 0);
		assert_int_equal(back, t);
		assert_int_equal(n, t % SEC ? 27 : 20);

		/* The same instant written with an offset of +HH:MM. */
		int oh = (int)(x >> 40) % 24, om = (int)(x >> 50) % 60;
		int64_t local = t + (oh * 60 + om) * 60 * SEC;
		if (local > hi)
			continue;
		keel_time_format(local, buf);
		buf[19] = 0; /* drop fraction and Z */
		snprintf(shifted, sizeof shifted, "%s.%06lld+%02d:%02d", buf,
			 (long long)(((t % SEC) + SEC) % SEC), oh, om);
		assert_int_equal(keel_time_parse(shifted, strlen(shifted), &back, NULL),
				 0);
		assert_int_equal(back, t);
	}
}

static void test_now(void **state)
{
	(void)state;
	int64_t before = (int64_t)time(NULL) * SEC;
	int64_t now = keel_time_now();
	int64_t after = ((int64_t)time(NULL) + 1) * SEC;
	assert_true(now >= before && now <= after);
}

/* The one civil-date algorithm (timestamp.h), which the parser, the
 * formatter and the generator share: known days, then every day from
 * 0001-01-01 to 9999-12-31 back and forth. */
static void test_civil_days(void **state)
{
	(void)state;
	static const struct {
		int64_t y, m, d, days;
	} known[] = {{1970, 1, 1, 0},	     {1969, 12, 31, -1},   {2000, 2, 29, 11016},
		     {2000, 3, 1, 11017},    {1900, 3, 1, -25508}, {2026, 1, 5, 20458},
		     {1, 1, 1, -719162},     {9999, 12, 31, 2932896}};
	for (size_t i = 0; i < sizeof known / sizeof known[0]; i++) {
		assert_int_equal(keel_days_from_civil(known[i].y, known[i].m, known[i].d),
				 known[i].days);
		int64_t y, m, d;
		keel_civil_from_days(known[i].days, &y, &m, &d);
		assert_int_equal(y, known[i].y);
		assert_int_equal(m, known[i].m);
		assert_int_equal(d, known[i].d);
	}
	int64_t py = 0, pm = 12, pd = 31;
	for (int64_t z = -719162; z <= 2932896; z++) {
		int64_t y, m, d;
		keel_civil_from_days(z, &y, &m, &d);
		/* the day after the previous one */
		bool next_day = y == py && m == pm && d == pd + 1;
		bool next_month = y == py && m == pm + 1 && d == 1;
		bool next_year = y == py + 1 && m == 1 && d == 1 && pm == 12 && pd == 31;
		if (!(next_day || next_month || next_year))
			fail_msg("day %lld: %lld-%lld-%lld after %lld-%lld-%lld", (long long)z,
				 (long long)y, (long long)m, (long long)d, (long long)py,
				 (long long)pm, (long long)pd);
		if (keel_days_from_civil(y, m, d) != z)
			fail_msg("day %lld does not round-trip", (long long)z);
		py = y, pm = m, pd = d;
	}
}

/* "now" is a time a read may ask about (--at, ?at=), never an event's. */
static void test_parse_at(void **state)
{
	(void)state;
	int64_t t = 0;
	const char *why = NULL;
	int64_t before = keel_time_now();
	assert_int_equal(keel_time_parse_at("now", 3, &t, &why), 0);
	int64_t after = keel_time_now();
	assert_true(before <= t && t <= after);
	assert_null(why);
	assert_int_equal(keel_time_parse_at("2026-01-05T09:30:00+01:00", 25, &t, &why), 0);
	assert_int_equal(t, 1767601800 * SEC);
	/* Only the exact word; the length given is what counts. */
	static const char *const bad[] = {"NOW", "now ", " now", "no", "nowZ", "yesterday", ""};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		why = NULL;
		assert_int_equal(keel_time_parse_at(bad[i], strlen(bad[i]), &t, &why),
				 KEEL_EINVAL);
		assert_non_null(why);
	}
	assert_int_equal(keel_time_parse_at("nowhere", 3, &t, NULL), 0);
	assert_int_equal(keel_time_parse("now", 3, &t, NULL), KEEL_EINVAL);
}

const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_parse_known_instants),
    cmocka_unit_test(test_civil_days),
    cmocka_unit_test(test_parse_lowercase_separators),
    cmocka_unit_test(test_parse_fraction),
    cmocka_unit_test(test_parse_offsets),
    cmocka_unit_test(test_parse_boundaries),
    cmocka_unit_test(test_parse_calendar),
    cmocka_unit_test(test_parse_shape),
    cmocka_unit_test(test_parse_uses_len_only),
    cmocka_unit_test(test_parse_usual_form),
    cmocka_unit_test(test_format_canonical),
    cmocka_unit_test(test_format_negative),
    cmocka_unit_test(test_format_out_of_range),
    cmocka_unit_test(test_every_day_against_timegm),
    cmocka_unit_test(test_round_trip_random),
    cmocka_unit_test(test_now),
    cmocka_unit_test(test_parse_at),
};

KEEL_TEST_MAIN(tests)
