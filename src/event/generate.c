/*
 * generate.c - the deterministic synthetic fleet stream (`keel generate
 * fleet`), profile 1.
 *
 * Profile 1's output for given options is frozen: benchmarks are compared
 * across versions, so any change to what this file writes - the event mix,
 * the random draws and their order, the field order, a city name - is a new
 * profile, never an edit of this one (tests/test_generate.c pins digests).
 * Nothing here depends on the machine or the C library: the random numbers
 * come from xoshiro256** seeded through splitmix64, probabilities become
 * 32-bit integer thresholds, and every number and time is formatted with
 * integer arithmetic (no printf, no locale, no floating point output).
 *
 * Shape: one global clock advances by 1 us to 4 s per generated event, so
 * times are strictly increasing and no two events (of any tenant) share a
 * time. Each event goes to a tenant drawn uniformly; each tenant runs a
 * small fleet simulation (depots, vehicles, drivers, trips) that keeps the
 * stream meaningful to the fleet cartridge. Late events are held back and
 * released 1-50 generated events later; duplicates re-send the exact bytes
 * of one of the last 1024 distinct lines written. See docs/generator.md.
 */
#include "keel.h"
#include "options.h"
#include "timestamp.h"
#include "util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------- randomness */

struct rng {
	uint64_t s[4];
};

static uint64_t splitmix64(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15u);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
	return z ^ (z >> 31);
}

static uint64_t rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

static uint64_t rng_next(struct rng *r)
{
	uint64_t *s = r->s;
	uint64_t result = rotl(s[1] * 5, 7) * 9;
	uint64_t t = s[1] << 17;
	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl(s[3], 45);
	return result;
}

static void rng_seed(struct rng *r, uint64_t seed)
{
	for (int i = 0; i < 4; i++)
		r->s[i] = splitmix64(&seed);
}

/* Uniform in [0, n), n > 0, without modulo bias. */
static uint64_t rng_below(struct rng *r, uint64_t n)
{
	uint64_t limit = UINT64_MAX - UINT64_MAX % n;
	uint64_t x;
	do
		x = rng_next(r);
	while (x >= limit);
	return x % n;
}

/* Uniform in [lo, hi]. */
static int64_t rng_range(struct rng *r, int64_t lo, int64_t hi)
{
	return lo + (int64_t)rng_below(r, (uint64_t)(hi - lo) + 1);
}

/* A probability as a threshold out of 2^32: exact in IEEE doubles, so the
 * same on every machine. */
static uint64_t threshold(double p)
{
	if (p >= 1.0)
		return UINT64_C(1) << 32;
	return (uint64_t)(p * 4294967296.0);
}

static bool rng_chance(struct rng *r, uint64_t thr)
{
	return (rng_next(r) >> 32) < thr;
}

/* ------------------------------------------------------------- formatting */

static void add_uint(struct keel_buf *b, uint64_t v, int width)
{
	char tmp[24];
	char *p = tmp + sizeof tmp;
	do {
		*--p = (char)('0' + v % 10);
		v /= 10;
		width--;
	} while (v || width > 0);
	keel_buf_add(b, p, (size_t)(tmp + sizeof tmp - p));
}

/* v / 10^decimals as a decimal lexeme: fixed(-8629105, 6) is -8.629105. */
static void add_fixed(struct keel_buf *b, int64_t v, int decimals)
{
	uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
	uint64_t scale = 1;
	for (int i = 0; i < decimals; i++)
		scale *= 10;
	if (v < 0)
		keel_buf_addc(b, '-');
	add_uint(b, u / scale, 1);
	keel_buf_addc(b, '.');
	add_uint(b, u % scale, decimals);
}

/* The generator's own form: always six fraction digits (profile 1's
 * bytes), where keel_time_format drops a zero fraction. */
static void add_time(struct keel_buf *b, int64_t us)
{
	int64_t secs = us / 1000000, frac = us % 1000000;
	int64_t sod = secs % 86400, y, m, d;
	keel_civil_from_days(secs / 86400, &y, &m, &d);
	add_uint(b, (uint64_t)y, 4);
	keel_buf_addc(b, '-');
	add_uint(b, (uint64_t)m, 2);
	keel_buf_addc(b, '-');
	add_uint(b, (uint64_t)d, 2);
	keel_buf_addc(b, 'T');
	add_uint(b, (uint64_t)(sod / 3600), 2);
	keel_buf_addc(b, ':');
	add_uint(b, (uint64_t)(sod / 60 % 60), 2);
	keel_buf_addc(b, ':');
	add_uint(b, (uint64_t)(sod % 60), 2);
	keel_buf_addc(b, '.');
	add_uint(b, (uint64_t)frac, 6);
	keel_buf_addc(b, 'Z');
}

/* A key and a string value that needs no escaping: ,"key":"value". */
static void add_kv(struct keel_buf *b, const char *key, const char *val)
{
	keel_buf_adds(b, ",\"");
	keel_buf_adds(b, key);
	keel_buf_adds(b, "\":\"");
	keel_buf_adds(b, val);
	keel_buf_addc(b, '"');
}

static void add_key(struct keel_buf *b, const char *key)
{
	keel_buf_adds(b, ",\"");
	keel_buf_adds(b, key);
	keel_buf_adds(b, "\":");
}

/* ,"key":"PREFIX-0042" */
static void add_id(struct keel_buf *b, const char *key, const char *prefix, uint64_t no,
		   int width)
{
	add_key(b, key);
	keel_buf_addc(b, '"');
	keel_buf_adds(b, prefix);
	add_uint(b, no, width);
	keel_buf_addc(b, '"');
}

/* ------------------------------------------------------------ the world */

struct city {
	const char *name;
	int32_t lat, lon; /* micro-degrees */
};

/* Fixed tables: part of profile 1. Some names are UTF-8 on purpose. */
static const struct city cities[] = {
    {"Lyon", 45764043, 4835659},
    {"Porto", 41157944, -8629105},
    {"Torino", 45070312, 7686856},
    {"Gent", 51054342, 3717424},
    {"Leipzig", 51339695, 12373075},
    {"Bilbao", 43263013, -2934985},
    {"Brno", 49195060, 16606837},
    {"\xc3\x85rhus", 56162939, 10203921},
    {"Graz", 47070714, 15439504},
    {"Wroc\xc5\x82"
     "aw",
     51107885, 17038538},
    {"Utrecht", 52090737, 5121420},
    {"Nantes", 47218371, -1553621},
    {"M\xc3\xa1laga", 36721274, -4421399},
    {"Aarau", 47392715, 8044445},
    {"Tartu", 58378025, 26728493},
    {"Cork", 51896892, -8486316},
};

static const char *const depot_areas[] = {"North", "South",   "East",	 "West",
					  "Port",  "Airport", "Central", "Rail Yard"};

static const struct {
	const char *make, *model;
} models[] = {
    {"Renault", "Master"}, {"Ford", "Transit"},	      {"Mercedes-Benz", "Sprinter"},
    {"Iveco", "Daily"},	   {"Volkswagen", "Crafter"}, {"Fiat", "Ducato"},
    {"Peugeot", "Boxer"},  {"Volvo", "FL"},	      {"MAN", "TGL"},
    {"DAF", "LF"},
};

static const char *const first_names[] = {
    "Ana",
    "Bruno",
    "Chlo\xc3\xab",
    "Dario",
    "Elif",
    "Femi",
    "Greta",
    "Hugo",
    "Ines",
    "Jonas",
    "Kaja",
    "Luca",
    "Mar\303\255a", /* octal: a hex escape would swallow the a */
    "Nils",
    "Olga",
    "Pavel",
    "Quinn",
    "Rosa",
    "Sven",
    "Tom\xc3\xa1\xc5\xa1",
    "Ute",
    "Vera",
    "Wim",
    "Yara",
};

static const char *const last_names[] = {
    "Moreau",
    "Silva",
    "Rossi",
    "Peeters",
    "M\xc3\xbcller",
    "Garc\303\255a",
    "Nov\xc3\xa1k",
    "Jensen",
    "Huber",
    "Kowalski",
    "de Vries",
    "Martin",
    "Murphy",
    "Tamm",
    "Keller",
    "Costa",
};

static const char *const license_classes[] = {"B", "C1", "C", "CE", "C1E"};

static const char *const statuses[] = {"available", "maintenance", "out_of_service",
				       "loading", "idle"};

static const char *const maintenance_reasons[] = {
    "scheduled service", "brake inspection", "tyre change", "oil change", "warning light",
};

static const char *const outage_reasons[] = {"accident damage", "engine fault",
					     "awaiting parts", "failed inspection"};

static const char *const retire_reasons[] = {"end of lease", "high mileage",
					     "written off", "sold"};

#define MAX_DEPOTS 20
#define MAX_ACTIVE_VEHICLES 500
#define MAX_DRIVERS 300
#define MIN_ACTIVE_VEHICLES 20 /* no retirements below this */
#define PICK_TRIES 8

struct depot {
	uint32_t city;
	int32_t lat, lon;
};

struct vehicle {
	uint32_t depot;
	int32_t lat, lon;
	int64_t odometer; /* 0.1 km */
	int64_t fuel;	  /* 0.1 % */
	uint32_t driver;  /* driver number, 0: none */
	uint32_t trip;	  /* trip number, 0: none */
	bool retired;
};

struct driver {
	uint32_t depot;
	uint32_t vehicle; /* 0: none */
};

/* Numbers are 1-based and index their array at number - 1. */
struct tenant {
	char name[32];
	uint64_t next_id;
	struct depot *depots;
	uint32_t ndepots;
	struct vehicle *vehicles;
	uint32_t nvehicles, vcap;
	uint32_t *active; /* numbers of vehicles not retired */
	uint32_t nactive;
	struct driver *drivers;
	uint32_t ndrivers, dcap;
	uint32_t trips;
};

enum ev_kind {
	EV_LOCATION,
	EV_ODOMETER,
	EV_FUEL,
	EV_STATUS,
	EV_TRIP_STARTED,
	EV_TRIP_COMPLETED,
	EV_ASSIGNED,
	EV_UNASSIGNED,
	EV_REGISTERED,
	EV_HIRED,
	EV_DEPOT,
	EV_RETIRED,
};

/* Weights out of 1000: the mix is dominated by telemetry reports. */
static const uint16_t weights[] = {
    [EV_LOCATION] = 400, [EV_ODOMETER] = 150,	 [EV_FUEL] = 130,
    [EV_STATUS] = 90,	 [EV_TRIP_STARTED] = 50, [EV_TRIP_COMPLETED] = 50,
    [EV_ASSIGNED] = 35,	 [EV_UNASSIGNED] = 25,	 [EV_REGISTERED] = 35,
    [EV_HIRED] = 20,	 [EV_DEPOT] = 5,	 [EV_RETIRED] = 10,
};

struct held {
	struct keel_buf line;
	uint64_t release; /* generated-event count at which it is written */
	uint64_t order;
};

#define RING 1024

struct gen {
	struct rng rng;
	FILE *out;
	uint64_t limit; /* lines to write */
	uint64_t written;
	uint64_t generated;
	uint64_t late_thr, dup_thr;
	int64_t clock;
	struct tenant *tenants;
	uint32_t ntenants;
	struct held *held;
	size_t nheld, heldcap;
	struct keel_buf ring[RING]; /* recent distinct lines, for duplicates */
	size_t nring;
	struct keel_buf data; /* the event being built */
};

/* ------------------------------------------------------------- emitting */

static void emit(struct gen *g, const struct keel_buf *line)
{
	fwrite(line->data, 1, line->len, g->out);
	fputc('\n', g->out);
	g->written++;
}

/* Writes a distinct (not duplicated) line and remembers it for re-sends. */
static void emit_distinct(struct gen *g, const struct keel_buf *line)
{
	emit(g, line);
	struct keel_buf *slot = &g->ring[g->nring % RING];
	keel_buf_reset(slot);
	keel_buf_add(slot, line->data, line->len);
	g->nring++;
}

static void hold(struct gen *g, const struct keel_buf *line, uint64_t release)
{
	if (g->nheld == g->heldcap) {
		g->heldcap = g->heldcap ? 2 * g->heldcap : 64;
		g->held = keel_xrealloc(g->held, g->heldcap * sizeof *g->held);
		for (size_t i = g->nheld; i < g->heldcap; i++)
			keel_buf_init(&g->held[i].line);
	}
	struct held *h = &g->held[g->nheld++];
	keel_buf_reset(&h->line);
	keel_buf_add(&h->line, line->data, line->len);
	h->release = release;
	h->order = g->generated;
}

/* Writes the held line that is due first (by release, then hold order) if
 * its release is at most `due`. Returns whether one was written. */
static bool release_one(struct gen *g, uint64_t due)
{
	size_t best = SIZE_MAX;
	for (size_t i = 0; i < g->nheld; i++) {
		const struct held *h = &g->held[i];
		if (best == SIZE_MAX || h->release < g->held[best].release ||
		    (h->release == g->held[best].release &&
		     h->order < g->held[best].order))
			best = i;
	}
	if (best == SIZE_MAX || g->held[best].release > due)
		return false;
	emit_distinct(g, &g->held[best].line);
	/* Swap the written entry to the end, keeping its buffer for reuse. */
	struct held tmp = g->held[best];
	g->held[best] = g->held[g->nheld - 1];
	g->held[g->nheld - 1] = tmp;
	g->nheld--;
	return true;
}

/* --------------------------------------------------------- fleet model */

static void tenant_init(struct tenant *t, uint32_t index, uint32_t ntenants)
{
	memset(t, 0, sizeof *t);
	int width = 2;
	for (uint32_t n = ntenants - 1; n >= 100; n /= 10)
		width++;
	struct keel_buf b;
	keel_buf_init(&b);
	keel_buf_adds(&b, "tenant-");
	add_uint(&b, index, width);
	memcpy(t->name, b.data, b.len + 1);
	keel_buf_free(&b);
	t->depots = keel_xcalloc(MAX_DEPOTS, sizeof *t->depots);
}

static void tenant_free(struct tenant *t)
{
	free(t->depots);
	free(t->vehicles);
	free(t->active);
	free(t->drivers);
}

/* Starts an envelope; the caller appends data members and closes it. */
static void begin(struct gen *g, struct tenant *t, const char *type, const char *source,
		  struct keel_buf *b)
{
	keel_buf_reset(b);
	keel_buf_adds(b, "{\"specversion\":\"1.0\",\"id\":\"ev-");
	add_uint(b, ++t->next_id, 9);
	keel_buf_adds(b, "\",\"source\":\"/fleet/");
	keel_buf_adds(b, t->name);
	keel_buf_addc(b, '/');
	keel_buf_adds(b, source);
	keel_buf_adds(b, "\",\"type\":\"");
	keel_buf_adds(b, type);
	keel_buf_adds(b, "\",\"time\":\"");
	add_time(b, g->clock);
	keel_buf_adds(b, "\",\"tenant\":\"");
	keel_buf_adds(b, t->name);
	keel_buf_adds(b, "\",\"datacontenttype\":\"application/json\",\"data\":{");
}

/* The data object's first member has no leading comma: begin() leaves the
 * buffer ending in '{', and each helper writes ",", so drop that one. */
static void end(struct keel_buf *b)
{
	keel_buf_adds(b, "}}");
}

static void fix_first_comma(struct keel_buf *b, size_t data_start)
{
	if (b->len > data_start && b->data[data_start] == ',') {
		memmove(b->data + data_start, b->data + data_start + 1,
			b->len - data_start - 1);
		b->len--;
		b->data[b->len] = 0;
	}
}

static void add_location(struct keel_buf *b, int32_t lat, int32_t lon)
{
	add_key(b, "location");
	keel_buf_adds(b, "{\"lat\":");
	add_fixed(b, lat, 6);
	keel_buf_adds(b, ",\"lon\":");
	add_fixed(b, lon, 6);
	keel_buf_addc(b, '}');
}

static void add_vehicle_id(struct keel_buf *b, uint32_t no)
{
	add_id(b, "vehicle_id", "V-", no, 4);
}

static void add_driver_id(struct keel_buf *b, uint32_t no)
{
	add_id(b, "driver_id", "DR-", no, 4);
}

static void add_depot_id(struct keel_buf *b, uint32_t no)
{
	add_id(b, "depot_id", "D-", no, 2);
}

static struct vehicle *vehicle(struct tenant *t, uint32_t no)
{
	return &t->vehicles[no - 1];
}

static struct driver *driver(struct tenant *t, uint32_t no)
{
	return &t->drivers[no - 1];
}

/* A random active vehicle satisfying a condition, in a few tries; 0 if none
 * turned up. */
enum want { ANY, WITH_DRIVER_NO_TRIP, ON_TRIP, FREE, IDLE_NO_DRIVER };

static bool vehicle_fits(const struct vehicle *v, enum want w)
{
	switch (w) {
	case ANY:
		return true;
	case WITH_DRIVER_NO_TRIP:
		return v->driver && !v->trip;
	case ON_TRIP:
		return v->trip != 0;
	case FREE:
		return !v->driver;
	case IDLE_NO_DRIVER:
		return !v->driver && !v->trip;
	}
	return false;
}

static uint32_t pick_vehicle(struct gen *g, struct tenant *t, enum want w)
{
	if (!t->nactive)
		return 0;
	for (int i = 0; i < PICK_TRIES; i++) {
		uint32_t no = t->active[rng_below(&g->rng, t->nactive)];
		if (vehicle_fits(vehicle(t, no), w))
			return no;
	}
	return 0;
}

static void ev_depot(struct gen *g, struct tenant *t, struct keel_buf *b)
{
	uint32_t no = ++t->ndepots;
	struct depot *d = &t->depots[no - 1];
	d->city = (uint32_t)rng_below(&g->rng, KEEL_ARRAY_LEN(cities));
	d->lat = cities[d->city].lat + (int32_t)rng_range(&g->rng, -20000, 20000);
	d->lon = cities[d->city].lon + (int32_t)rng_range(&g->rng, -20000, 20000);
	begin(g, t, "fleet.depot.opened", "registry", b);
	size_t ds = b->len;
	add_depot_id(b, no);
	keel_buf_adds(b, ",\"name\":\"");
	keel_buf_adds(b, cities[d->city].name);
	keel_buf_addc(b, ' ');
	keel_buf_adds(b, depot_areas[rng_below(&g->rng, KEEL_ARRAY_LEN(depot_areas))]);
	keel_buf_addc(b, '"');
	add_kv(b, "city", cities[d->city].name);
	add_location(b, d->lat, d->lon);
	fix_first_comma(b, ds);
	end(b);
}

static void ev_registered(struct gen *g, struct tenant *t, struct keel_buf *b)
{
	if (t->nvehicles == t->vcap) {
		t->vcap = t->vcap ? 2 * t->vcap : 64;
		t->vehicles = keel_xrealloc(t->vehicles, t->vcap * sizeof *t->vehicles);
		t->active = keel_xrealloc(t->active, t->vcap * sizeof *t->active);
	}
	uint32_t no = ++t->nvehicles;
	struct vehicle *v = vehicle(t, no);
	memset(v, 0, sizeof *v);
	v->depot = (uint32_t)rng_range(&g->rng, 1, t->ndepots);
	v->lat = t->depots[v->depot - 1].lat;
	v->lon = t->depots[v->depot - 1].lon;
	v->odometer = rng_range(&g->rng, 50000, 1500000);
	v->fuel = rng_range(&g->rng, 400, 1000);
	t->active[t->nactive++] = no;
	size_t m = rng_below(&g->rng, KEEL_ARRAY_LEN(models));
	begin(g, t, "fleet.vehicle.registered", "registry", b);
	size_t ds = b->len;
	add_vehicle_id(b, no);
	add_depot_id(b, v->depot);
	add_kv(b, "make", models[m].make);
	add_kv(b, "model", models[m].model);
	add_key(b, "year");
	add_uint(b, (uint64_t)rng_range(&g->rng, 2012, 2025), 4);
	add_key(b, "vin");
	keel_buf_adds(b, "\"VF");
	static const char vin_chars[] = "0123456789ABCDEFGHJKLMNPRSTUVWXYZ";
	for (int i = 0; i < 15; i++)
		keel_buf_addc(b, vin_chars[rng_below(&g->rng, sizeof vin_chars - 1)]);
	keel_buf_addc(b, '"');
	fix_first_comma(b, ds);
	end(b);
}

static void ev_hired(struct gen *g, struct tenant *t, struct keel_buf *b)
{
	if (t->ndrivers == t->dcap) {
		t->dcap = t->dcap ? 2 * t->dcap : 64;
		t->drivers = keel_xrealloc(t->drivers, t->dcap * sizeof *t->drivers);
	}
	uint32_t no = ++t->ndrivers;
	struct driver *d = driver(t, no);
	d->depot = (uint32_t)rng_range(&g->rng, 1, t->ndepots);
	d->vehicle = 0;
	begin(g, t, "fleet.driver.hired", "hr", b);
	size_t ds = b->len;
	add_driver_id(b, no);
	add_depot_id(b, d->depot);
	keel_buf_adds(b, ",\"name\":\"");
	keel_buf_adds(b, first_names[rng_below(&g->rng, KEEL_ARRAY_LEN(first_names))]);
	keel_buf_addc(b, ' ');
	keel_buf_adds(b, last_names[rng_below(&g->rng, KEEL_ARRAY_LEN(last_names))]);
	keel_buf_addc(b, '"');
	add_kv(b, "license_class",
	       license_classes[rng_below(&g->rng, KEEL_ARRAY_LEN(license_classes))]);
	fix_first_comma(b, ds);
	end(b);
}

static void ev_location(struct gen *g, struct tenant *t, struct keel_buf *b, uint32_t no)
{
	struct vehicle *v = vehicle(t, no);
	const struct depot *d = &t->depots[v->depot - 1];
	/* A random walk that stays within half a degree of the depot. */
	v->lat += (int32_t)rng_range(&g->rng, -3000, 3000);
	v->lon += (int32_t)rng_range(&g->rng, -3000, 3000);
	if (v->lat > d->lat + 500000 || v->lat < d->lat - 500000)
		v->lat = d->lat;
	if (v->lon > d->lon + 500000 || v->lon < d->lon - 500000)
		v->lon = d->lon;
	int64_t speed = v->trip
			    ? rng_range(&g->rng, 150, 1150)
			    : (rng_below(&g->rng, 4) ? 0 : rng_range(&g->rng, 10, 400));
	begin(g, t, "fleet.vehicle.location_reported", "telematics", b);
	size_t ds = b->len;
	add_vehicle_id(b, no);
	add_location(b, v->lat, v->lon);
	add_key(b, "speed_kmh");
	add_fixed(b, speed, 1);
	add_key(b, "heading_deg");
	add_uint(b, rng_below(&g->rng, 360), 1);
	fix_first_comma(b, ds);
	end(b);
}

static void ev_odometer(struct gen *g, struct tenant *t, struct keel_buf *b, uint32_t no)
{
	struct vehicle *v = vehicle(t, no);
	v->odometer += rng_range(&g->rng, 1, 300);
	begin(g, t, "fleet.vehicle.odometer_reported", "telematics", b);
	size_t ds = b->len;
	add_vehicle_id(b, no);
	add_key(b, "odometer_km");
	add_fixed(b, v->odometer, 1);
	add_kv(b, "unit", "km");
	fix_first_comma(b, ds);
	end(b);
}

static void ev_fuel(struct gen *g, struct tenant *t, struct keel_buf *b, uint32_t no)
{
	struct vehicle *v = vehicle(t, no);
	v->fuel -= rng_range(&g->rng, 1, 30);
	if (v->fuel < 150)
		v->fuel = rng_range(&g->rng, 900, 1000); /* refuelled */
	begin(g, t, "fleet.vehicle.fuel_reported", "telematics", b);
	size_t ds = b->len;
	add_vehicle_id(b, no);
	add_key(b, "fuel_pct");
	add_fixed(b, v->fuel, 1);
	add_key(b, "range_km");
	add_uint(b, (uint64_t)(v->fuel * 6 / 10), 1);
	fix_first_comma(b, ds);
	end(b);
}

static void ev_status(struct gen *g, struct tenant *t, struct keel_buf *b, uint32_t no)
{
	size_t s = rng_below(&g->rng, KEEL_ARRAY_LEN(statuses));
	begin(g, t, "fleet.vehicle.status_changed", "telematics", b);
	size_t ds = b->len;
	add_vehicle_id(b, no);
	add_kv(b, "status", statuses[s]);
	/* A status without a reason asserts "no reason" (JSON null). */
	if (s == 1)
		add_kv(b, "reason",
		       maintenance_reasons[rng_below(
			   &g->rng, KEEL_ARRAY_LEN(maintenance_reasons))]);
	else if (s == 2)
		add_kv(
		    b, "reason",
		    outage_reasons[rng_below(&g->rng, KEEL_ARRAY_LEN(outage_reasons))]);
	else
		keel_buf_adds(b, ",\"reason\":null");
	fix_first_comma(b, ds);
	end(b);
}

static void ev_assigned(struct gen *g, struct tenant *t, struct keel_buf *b, uint32_t dno,
			uint32_t vno)
{
	driver(t, dno)->vehicle = vno;
	vehicle(t, vno)->driver = dno;
	begin(g, t, "fleet.driver.assigned", "dispatch", b);
	size_t ds = b->len;
	add_driver_id(b, dno);
	add_vehicle_id(b, vno);
	add_kv(b, "shift", rng_below(&g->rng, 2) ? "day" : "night");
	fix_first_comma(b, ds);
	end(b);
}

static void ev_unassigned(struct gen *g, struct tenant *t, struct keel_buf *b,
			  uint32_t vno)
{
	struct vehicle *v = vehicle(t, vno);
	uint32_t dno = v->driver;
	driver(t, dno)->vehicle = 0;
	v->driver = 0;
	begin(g, t, "fleet.driver.unassigned", "dispatch", b);
	size_t ds = b->len;
	add_driver_id(b, dno);
	add_vehicle_id(b, vno);
	add_kv(b, "shift", rng_below(&g->rng, 2) ? "day" : "night");
	fix_first_comma(b, ds);
	end(b);
}

static void ev_trip_started(struct gen *g, struct tenant *t, struct keel_buf *b,
			    uint32_t vno)
{
	struct vehicle *v = vehicle(t, vno);
	v->trip = ++t->trips;
	const struct depot *d = &t->depots[v->depot - 1];
	begin(g, t, "fleet.trip.started", "dispatch", b);
	size_t ds = b->len;
	add_id(b, "trip_id", "T-", v->trip, 6);
	add_vehicle_id(b, vno);
	add_driver_id(b, v->driver);
	add_kv(b, "origin", cities[d->city].name);
	add_kv(b, "destination", cities[rng_below(&g->rng, KEEL_ARRAY_LEN(cities))].name);
	add_key(b, "cargo_kg");
	add_uint(b, (uint64_t)rng_range(&g->rng, 50, 3500), 1);
	fix_first_comma(b, ds);
	end(b);
}

static void ev_trip_completed(struct gen *g, struct tenant *t, struct keel_buf *b,
			      uint32_t vno)
{
	struct vehicle *v = vehicle(t, vno);
	uint32_t trip = v->trip;
	v->trip = 0;
	int64_t dist = rng_range(&g->rng, 50, 4000);
	begin(g, t, "fleet.trip.completed", "dispatch", b);
	size_t ds = b->len;
	add_id(b, "trip_id", "T-", trip, 6);
	add_vehicle_id(b, vno);
	add_driver_id(b, v->driver);
	add_key(b, "distance_km");
	add_fixed(b, dist, 1);
	add_key(b, "duration_s");
	add_uint(b, (uint64_t)(dist * 6 + rng_range(&g->rng, 0, 1800)), 1);
	fix_first_comma(b, ds);
	end(b);
}

static void ev_retired(struct gen *g, struct tenant *t, struct keel_buf *b, uint32_t vno)
{
	struct vehicle *v = vehicle(t, vno);
	v->retired = true;
	for (uint32_t i = 0; i < t->nactive; i++)
		if (t->active[i] == vno) {
			t->active[i] = t->active[--t->nactive];
			break;
		}
	begin(g, t, "fleet.vehicle.retired", "registry", b);
	size_t ds = b->len;
	add_vehicle_id(b, vno);
	add_depot_id(b, v->depot);
	add_kv(b, "reason",
	       retire_reasons[rng_below(&g->rng, KEEL_ARRAY_LEN(retire_reasons))]);
	fix_first_comma(b, ds);
	end(b);
}

static enum ev_kind draw_kind(struct gen *g)
{
	uint64_t x = rng_below(&g->rng, 1000);
	enum ev_kind k = EV_LOCATION;
	while (x >= weights[k]) {
		x -= weights[k];
		k++;
	}
	return k;
}

/* Builds the tenant's next event into b. Bootstrapping comes first (a
 * depot, vehicles, drivers); a drawn event whose preconditions do not hold
 * becomes a location report. */
static void next_event(struct gen *g, struct tenant *t, struct keel_buf *b)
{
	if (t->ndepots == 0) {
		ev_depot(g, t, b);
		return;
	}
	if (t->nactive < 3) {
		ev_registered(g, t, b);
		return;
	}
	if (t->ndrivers < 2) {
		ev_hired(g, t, b);
		return;
	}
	enum ev_kind k = draw_kind(g);
	uint32_t vno = 0;
	switch (k) {
	case EV_DEPOT:
		if (t->ndepots < MAX_DEPOTS) {
			ev_depot(g, t, b);
			return;
		}
		break;
	case EV_REGISTERED:
		if (t->nactive < MAX_ACTIVE_VEHICLES) {
			ev_registered(g, t, b);
			return;
		}
		break;
	case EV_HIRED:
		if (t->ndrivers < MAX_DRIVERS) {
			ev_hired(g, t, b);
			return;
		}
		break;
	case EV_ASSIGNED: {
		uint32_t dno = (uint32_t)rng_range(&g->rng, 1, t->ndrivers);
		vno = pick_vehicle(g, t, FREE);
		if (vno && !driver(t, dno)->vehicle) {
			ev_assigned(g, t, b, dno, vno);
			return;
		}
		break;
	}
	case EV_UNASSIGNED:
		vno = pick_vehicle(g, t, WITH_DRIVER_NO_TRIP);
		if (vno) {
			ev_unassigned(g, t, b, vno);
			return;
		}
		break;
	case EV_TRIP_STARTED:
		vno = pick_vehicle(g, t, WITH_DRIVER_NO_TRIP);
		if (vno) {
			ev_trip_started(g, t, b, vno);
			return;
		}
		break;
	case EV_TRIP_COMPLETED:
		vno = pick_vehicle(g, t, ON_TRIP);
		if (vno) {
			ev_trip_completed(g, t, b, vno);
			return;
		}
		break;
	case EV_RETIRED:
		vno = t->nactive > MIN_ACTIVE_VEHICLES
			  ? pick_vehicle(g, t, IDLE_NO_DRIVER)
			  : 0;
		if (vno) {
			ev_retired(g, t, b, vno);
			return;
		}
		break;
	case EV_STATUS:
		ev_status(g, t, b, pick_vehicle(g, t, ANY));
		return;
	case EV_ODOMETER:
		ev_odometer(g, t, b, pick_vehicle(g, t, ANY));
		return;
	case EV_FUEL:
		ev_fuel(g, t, b, pick_vehicle(g, t, ANY));
		return;
	case EV_LOCATION:
		break;
	}
	ev_location(g, t, b, pick_vehicle(g, t, ANY));
}

/* --------------------------------------------------------------- driver */

static bool valid_fraction(double p)
{
	return !isnan(p) && p >= 0.0 && p <= 1.0;
}

int keel_generate_fleet(const struct keel_generate_options *given, FILE *out)
{
	struct keel_generate_options opt;
	if (!given || !out || keel_options_copy(&opt, sizeof opt, given))
		return KEEL_EINVAL;
	const struct keel_generate_options *o = &opt;
	if (!valid_fraction(o->late) || !valid_fraction(o->duplicates))
		return KEEL_EINVAL;
	struct gen *g = keel_xcalloc(1, sizeof *g);
	g->out = out;
	g->limit = o->events;
	g->late_thr = threshold(o->late);
	g->dup_thr = threshold(o->duplicates);
	rng_seed(&g->rng, o->seed ? o->seed : 1);
	g->ntenants = o->tenants ? o->tenants : 1;
	g->tenants = keel_xcalloc(g->ntenants, sizeof *g->tenants);
	for (uint32_t i = 0; i < g->ntenants; i++)
		tenant_init(&g->tenants[i], i, g->ntenants);
	g->clock =
	    keel_days_from_civil(2026, 1, 5) * 86400 * 1000000 + INT64_C(6) * 3600 * 1000000;
	for (size_t i = 0; i < RING; i++)
		keel_buf_init(&g->ring[i]);
	keel_buf_init(&g->data);

	while (g->written < g->limit) {
		if (g->nring && rng_chance(&g->rng, g->dup_thr)) {
			size_t back =
			    rng_below(&g->rng, g->nring < RING ? g->nring : RING);
			emit(g, &g->ring[(g->nring - 1 - back) % RING]);
			continue;
		}
		/* The held lines fill the last slots: none is lost. */
		if (g->written + g->nheld >= g->limit) {
			release_one(g, UINT64_MAX);
			continue;
		}
		g->clock += rng_range(&g->rng, 1, 4000000);
		struct tenant *t = &g->tenants[rng_below(&g->rng, g->ntenants)];
		next_event(g, t, &g->data);
		g->generated++;
		if (rng_chance(&g->rng, g->late_thr))
			hold(g, &g->data,
			     g->generated + (uint64_t)rng_range(&g->rng, 1, 50));
		else
			emit_distinct(g, &g->data);
		while (g->written < g->limit && release_one(g, g->generated))
			;
	}

	for (uint32_t i = 0; i < g->ntenants; i++)
		tenant_free(&g->tenants[i]);
	free(g->tenants);
	for (size_t i = 0; i < g->heldcap; i++)
		keel_buf_free(&g->held[i].line);
	free(g->held);
	for (size_t i = 0; i < RING; i++)
		keel_buf_free(&g->ring[i]);
	keel_buf_free(&g->data);
	free(g);
	return ferror(out) ? KEEL_EIO : 0;
}
