/*
 * cmd_serve.c - keel serve: runs the HTTP API (
 * docs/http.md) until SIGTERM or SIGINT, then stops gracefully: no new
 * connections, requests under way finish, batches are never cut.
 *
 * Signals are blocked before the server starts, so every server thread
 * inherits the mask and only this thread, in sigwait, ever sees them.
 */
#include "cli.h"

#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

enum {
	OPT_THREADS = 256, /* no short option: -j is --json wherever it is */
	OPT_MAX_BODY,
	OPT_MAX_LINE,
	OPT_MAX_BUFFERED,
	OPT_MAX_CONN,
	OPT_MAX_PER_IP,
	OPT_IDLE,
	OPT_HEADER,
	OPT_REQUEST,
	OPT_GRACE,
	OPT_TLS_CERT,
	OPT_TLS_KEY,
	OPT_INSECURE_HTTP,
	OPT_METRICS_TENANTS,
	OPT_FORWARD,
	OPT_STREAM,
	OPT_STORE_MAP,
};

static bool parse_uint(const char *s, unsigned max, unsigned *out)
{
	uint64_t v;
	if (!cli_parse_u64(s, &v) || v == 0 || v > max)
		return false;
	*out = (unsigned)v;
	return true;
}

static int serve_run(const struct keel_cmd *cmd, int argc, char **argv)
{
	static const struct option opts[] = {
		{"listen", required_argument, NULL, 'l'},
		{"store", required_argument, NULL, 's'},
		{"cartridge", required_argument, NULL, 'c'},
		{"tokens", required_argument, NULL, 't'},
		{"threads", required_argument, NULL, OPT_THREADS},
		{"max-body", required_argument, NULL, OPT_MAX_BODY},
		{"max-line", required_argument, NULL, OPT_MAX_LINE},
		{"max-buffered", required_argument, NULL, OPT_MAX_BUFFERED},
		{"max-connections", required_argument, NULL, OPT_MAX_CONN},
		{"max-per-ip", required_argument, NULL, OPT_MAX_PER_IP},
		{"idle-timeout", required_argument, NULL, OPT_IDLE},
		{"header-timeout", required_argument, NULL, OPT_HEADER},
		{"request-timeout", required_argument, NULL, OPT_REQUEST},
		{"grace", required_argument, NULL, OPT_GRACE},
		{"tls-cert", required_argument, NULL, OPT_TLS_CERT},
		{"tls-key", required_argument, NULL, OPT_TLS_KEY},
		{"insecure-http", no_argument, NULL, OPT_INSECURE_HTTP},
		{"metrics-tenants", required_argument, NULL, OPT_METRICS_TENANTS},
		{"forward", required_argument, NULL, OPT_FORWARD},
		{"stream", required_argument, NULL, OPT_STREAM},
		{"store-map", required_argument, NULL, OPT_STORE_MAP},
		{"quiet", no_argument, NULL, 'q'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct keel_server_options o = {.size = sizeof o};
	o.log = stderr;
	o.request_log = stderr;
	uint64_t size;
	int c;
	optind = 0;
	while ((c = getopt_long(argc, argv, "l:s:c:t:qh", opts, NULL)) != -1) {
		const char *name = NULL;
		bool ok = true;
		switch (c) {
		case 'l':
			o.listen = optarg;
			break;
		case 's':
			o.store_url = optarg;
			break;
		case 'c':
			if (!cli_option_once(cmd, &o.cartridge, optarg, "--cartridge"))
				return CLI_USAGE;
			break;
		case 't':
			o.token_file = optarg;
			break;
		case OPT_THREADS:
			name = "threads";
			ok = parse_uint(optarg, 1024, &o.threads);
			break;
		case OPT_MAX_BODY:
			name = "max-body";
			ok = cli_parse_size(optarg, &size) && size > 0 && size <= SIZE_MAX / 2;
			o.max_body = (size_t)size;
			break;
		case OPT_MAX_LINE:
			name = "max-line";
			ok = cli_parse_size(optarg, &size) && size > 0 && size <= SIZE_MAX / 2;
			o.max_line = (size_t)size;
			break;
		case OPT_MAX_BUFFERED:
			name = "max-buffered";
			ok = cli_parse_size(optarg, &size) && size > 0 && size <= SIZE_MAX / 2;
			o.max_buffered = (size_t)size;
			break;
		case OPT_MAX_CONN:
			name = "max-connections";
			ok = parse_uint(optarg, 1000000, &o.max_connections);
			break;
		case OPT_MAX_PER_IP:
			name = "max-per-ip";
			ok = parse_uint(optarg, 1000000, &o.max_per_ip);
			break;
		case OPT_IDLE:
			name = "idle-timeout";
			ok = parse_uint(optarg, 86400, &o.idle_timeout);
			break;
		case OPT_HEADER:
			name = "header-timeout";
			ok = parse_uint(optarg, 86400, &o.header_timeout);
			break;
		case OPT_REQUEST:
			name = "request-timeout";
			ok = parse_uint(optarg, 86400, &o.request_timeout);
			break;
		case OPT_GRACE:
			name = "grace";
			ok = parse_uint(optarg, 86400, &o.grace);
			break;
		case OPT_TLS_CERT:
			o.tls_cert = optarg;
			break;
		case OPT_TLS_KEY:
			o.tls_key = optarg;
			break;
		case OPT_INSECURE_HTTP:
			o.insecure_http = true;
			break;
		case OPT_METRICS_TENANTS:
			o.metrics_tenants = optarg;
			break;
		case OPT_FORWARD:
			o.forward = optarg;
			break;
		case OPT_STREAM:
			o.forward_stream = optarg;
			break;
		case OPT_STORE_MAP:
			o.store_map = optarg;
			break;
		case 'q':
			o.request_log = NULL;
			break;
		case 'h':
			cli_help(cmd, stdout);
			return CLI_OK;
		default:
			return cli_unknown_option(cmd, argv, opts);
		}
		if (!ok)
			return cli_usage_error(cmd, "--%s \"%s\": not a positive number in range",
					       name, optarg);
	}
	if (optind != argc)
		return cli_usage_error(cmd, "unexpected argument \"%s\"", argv[optind]);
	if (!o.forward != !o.forward_stream)
		return cli_usage_error(cmd, "--forward SERVERS and --stream NAME go together");
	/* Options that contradict each other or the listening address
	 * (TLS half given, tokens in clear off loopback) are the caller's
	 * mistake: a usage error, before any file is read. */
	char *why = NULL;
	if (keel_server_check_options(&o, &why) != 0) {
		int rc = cli_usage_error(cmd, "%s", why ? why : "invalid options");
		free(why);
		return rc;
	}

	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);

	if (cli_check_store_url(cmd, o.store_url) != CLI_OK)
		return CLI_FATAL;
	struct keel_server *srv = NULL;
	char *err = NULL;
	if (keel_server_start(&o, &srv, &err) != 0) {
		int rc = cli_error(cmd, "%s", err ? err : "cannot start the server");
		free(err);
		return rc;
	}
	int sig = 0;
	sigwait(&set, &sig);
	fprintf(stderr, "keel serve: %s: finishing requests under way\n",
		sig == SIGINT ? "SIGINT" : "SIGTERM");
	keel_server_stop(srv);
	return CLI_OK;
}

/* The help's sizes: a new default must change the text too. */
_Static_assert(KEEL_DEFAULT_MAX_BODY == 16 << 20 && KEEL_DEFAULT_MAX_LINE == 1 << 20 &&
		   KEEL_DEFAULT_MAX_BUFFERED == (size_t)256 << 20,
	       "serve's size defaults in the help");

const struct keel_cmd keel_cmd_serve = {
	.name = "serve",
	.summary = "Serve the HTTP API: post events, read the graph.",
	.usage = "serve [--listen HOST:PORT] [--store URL] [--tokens FILE]\n"
		 "      [--tls-cert FILE --tls-key FILE | --insecure-http] [options]\n"
		 "\n"
		 "options:\n"
		 "  -l, --listen HOST:PORT   address (default 127.0.0.1:8080; [::1]:8080 for\n"
		 "                           IPv6; port 0 picks a free one)\n"
		 "  -s, --store URL          store (default: $KEEL_STORE, else sqlite:keel.db)\n"
		 "  -c, --cartridge NAME     built-in cartridge name (" KEEL_BUILTIN_CARTRIDGE ") or path\n"
		 "                           (default: each tenant's recorded cartridge;\n"
		 "                           an event of a tenant with none is rejected)\n"
		 "  -t, --tokens FILE        bearer token file; without one the server only\n"
		 "                           listens on loopback and asks for no token\n"
		 "      --tls-cert FILE      HTTPS with this PEM certificate (chain)...\n"
		 "      --tls-key FILE       ...and its PEM private key; both or neither\n"
		 "      --insecure-http      with --tokens, listen off loopback in plain HTTP\n"
		 "                           (a proxy in front terminates TLS); refused\n"
		 "                           otherwise, so that tokens never travel in clear\n"
		 "      --threads N          worker threads (default 4)\n"
		 "      --max-body SIZE      largest request body, K/M/G suffixes (16M)\n"
		 "      --max-line SIZE      largest single event (1M)\n"
		 "      --max-buffered SIZE  request bodies in memory, all together (256M)\n"
		 "      --max-connections N  open connections at once (1000)\n"
		 "      --max-per-ip N       open connections from one address (64)\n"
		 "      --idle-timeout S     close a connection silent for S seconds (30)\n"
		 "      --header-timeout S   headers must arrive within S seconds of\n"
		 "                           connecting or of the last answer (10)\n"
		 "      --request-timeout S  a whole request within S seconds (60)\n"
		 "      --grace S            on SIGTERM/SIGINT, wait at most S seconds for\n"
		 "                           requests under way (10)\n"
		 "      --metrics-tenants N|all|T1,T2,...\n"
		 "                           tenants with series of their own in /metrics:\n"
		 "                           the first N seen (" KEEL_DEFAULT_METRICS_TENANTS
		 "; 0: none), all, or\n"
		 "                           those named; the rest are summed\n"
		 "      --forward SERVERS    publish POSTed events to the log (nats://HOST:PORT\n"
		 "                           [,...]) instead of the store, answering once\n"
		 "                           the log has them; the store serves reads\n"
		 "      --stream NAME        the log --forward publishes to\n"
		 "      --store-map FILE     read each tenant from its partition's store\n"
		 "                           (docs/log.md); with --forward, not --store\n"
		 "  -q, --quiet              no request log (one JSON line per request on\n"
		 "                           stderr otherwise)\n"
		 "  -h, --help               this help\n"
		 "\n"
		 "Endpoints, bodies, status codes and the token file: docs/http.md.\n"
		 "A page for people at /ui/ (find entities, see a timeline): docs/ui.md.\n"
		 "Create tokens with 'keel token new'.",
	.run = serve_run,
};
