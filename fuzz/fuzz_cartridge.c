/*
 * fuzz_cartridge.c - libFuzzer target for the declarative cartridge format.
 *
 * A cartridge is operator input: a bad one must fail at load with one
 * message naming where it went wrong, never crash. One that compiles is
 * then run: a few fleet envelopes go through an ingester on a memory
 * store, so that the compiled plan (pointer lookups, templates, value
 * sources) meets real events, and every event must come out counted
 * exactly once.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "keel.h"
#include "check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Events of several types, with fields present, missing and of odd types
 * (and a string holding U+0000, which no identifier may take), so that a
 * fuzzed plan finds both hits and pointer misses. */
static const char *const fuzz_events[] = {
    "{\"id\":\"e1\",\"type\":\"fleet.vehicle.registered\",\"time\":\"2026-01-01T00:00:00Z\","
    "\"tenant\":\"t\",\"data\":{\"vehicle_id\":\"v1\",\"depot_id\":\"d1\",\"make\":\"M\","
    "\"model\":\"X\",\"year\":2020}}",
    "{\"id\":\"e2\",\"type\":\"fleet.vehicle.status_changed\",\"time\":\"2026-01-01T00:00:01Z\","
    "\"tenant\":\"t\",\"data\":{\"vehicle_id\":\"v1\",\"status\":null,\"n\":[1,{\"a\":\"\"}]}}",
    "{\"id\":\"e3\",\"type\":\"a\",\"time\":\"2026-01-01T00:00:02Z\",\"tenant\":\"t\","
    "\"data\":{\"a\":{\"b\":\"c\"},\"x\":\"y\",\"z\":\"a\\u0000b\",\"\":\"empty\",\"~\":\"t\"}}",
    "{\"id\":\"e4\",\"type\":\"a\",\"time\":\"2025-12-31T23:59:59Z\",\"tenant\":\"t\","
    "\"data\":{\"a\":7,\"x\":true}}",
    /* null and missing where a template or value may be optional or have
     * a default */
    "{\"id\":\"e5\",\"type\":\"fleet.vehicle.status_changed\",\"time\":"
    "\"2026-01-01T00:00:03Z\",\"tenant\":\"t\",\"data\":{\"vehicle_id\":\"v1\","
    "\"reason\":null,\"x\":null}}",
    "{\"id\":\"e6\",\"type\":\"a\",\"time\":\"2026-01-01T00:00:04Z\",\"tenant\":\"t\","
    "\"data\":{\"a\":null,\"q\":\"\",\"n\":[]}}",
};

static void count_reject(void *userdata, uint64_t position, const char *id,
			 const char *message, const char *input, size_t input_len)
{
	(void)position;
	(void)id;
	(void)input;
	(void)input_len;
	CHECK(message && message[0] != '\0');
	(*(uint64_t *)userdata)++;
}

static void run_events(const struct keel_cartridge *cart)
{
	struct keel_store *s;
	CHECK(keel_store_open("memory:", &s, NULL) == 0);
	uint64_t rejects = 0;
	struct keel_ingest_options o = {
	    .size = sizeof o,
	    .cartridge = cart, .batch = 2, .on_reject = count_reject, .reject_userdata = &rejects};
	struct keel_ingest *ing;
	CHECK(keel_ingest_new(s, &o, &ing) == 0);
	size_t n = sizeof fuzz_events / sizeof fuzz_events[0];
	for (size_t i = 0; i < n; i++)
		CHECK(keel_ingest_add(ing, fuzz_events[i], strlen(fuzz_events[i]), i + 1) == 0);
	CHECK(keel_ingest_flush(ing) == 0);
	const struct keel_report *r = keel_ingest_report(ing);
	CHECK(r->read == n);
	CHECK(r->accepted + r->duplicates + r->rejected == n);
	CHECK(r->rejected == rejects);
	keel_ingest_free(ing);
	keel_store_close(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct keel_cartridge *cart = NULL;
	char *err = NULL;
	if (keel_cartridge_compile((const char *)data, size, &cart, &err) != 0) {
		CHECK(cart == NULL);
		CHECK(err && err[0] != '\0' && strchr(err, '\n') == NULL);
		free(err);
		return 0;
	}
	CHECK(cart && err == NULL);
	CHECK(keel_cartridge_name(cart) != NULL);
	run_events(cart);
	keel_cartridge_free(cart);
	return 0;
}
