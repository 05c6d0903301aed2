/*
 * nats_pub.c - a plain NATS JetStream producer for the log's tests: it
 * knows nothing of Keel (it links libnats alone), so what it publishes is
 * what any CloudEvents producer with a NATS transport could send.
 *
 *   nats_pub SERVERS FILE
 *
 * FILE holds records, each a message, prepared by the test (which
 * computes the partition itself, from the documented hash):
 *
 *   H NAME VALUE\n        a header (any number, before its message)
 *   M SUBJECT LENGTH\n    the message: LENGTH bytes of payload follow,
 *   PAYLOAD\n             then a newline
 *
 * Messages are published one at a time and each acknowledgement awaited,
 * so each partition's messages are stored in the file's order. Exits 0
 * once all are stored, 1 with a message otherwise.
 *
 *   nats_pub SERVERS --read STREAM
 *
 * prints the payload of each message of STREAM, in sequence order, one a
 * line (an ordered consumer of its own): the log as it is, for a test to
 * compare with what was published and what was applied.
 *
 *   nats_pub SERVERS --stepdown STREAM...
 *
 * asks each stream's leader to step down (JetStream's API subject
 * $JS.API.STREAM.LEADER.STEPDOWN.<stream>; nats-server has no command for
 * it), so that a test can make leader elections while a publisher runs.
 * A stream without a leader at that moment answers with an error, which
 * is printed on stderr and is no failure: exits 0 once connected.
 */
#include <nats/nats.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The messages of stream, in order, to stdout: up to its last sequence
 * when started (the stream's leader's answer). */
static int read_stream(jsCtx *js, const char *stream)
{
	jsStreamInfo *si = NULL;
	jsErrCode jerr = 0;
	natsStatus s = js_GetStreamInfo(&si, js, stream, NULL, &jerr);
	if (s != NATS_OK) {
		fprintf(stderr, "nats_pub: stream %s: %s (%d)\n", stream, natsStatus_GetText(s),
			(int)jerr);
		return 1;
	}
	uint64_t last = si->State.LastSeq, msgs = si->State.Msgs;
	const char *subject = si->Config->SubjectsLen ? si->Config->Subjects[0] : ">";
	natsSubscription *sub = NULL;
	jsSubOptions so;
	jsSubOptions_Init(&so);
	so.Stream = stream;
	so.Ordered = true;
	if (msgs)
		s = js_SubscribeSync(&sub, js, subject, NULL, &so, &jerr);
	uint64_t seq = 0;
	while (s == NATS_OK && msgs && seq < last) {
		natsMsg *m = NULL;
		jsMsgMetaData *meta = NULL;
		s = natsSubscription_NextMsg(&m, sub, 10000);
		if (s == NATS_OK)
			s = natsMsg_GetMetaData(&meta, m);
		if (s == NATS_OK) {
			seq = meta->Sequence.Stream;
			fwrite(natsMsg_GetData(m), 1, (size_t)natsMsg_GetDataLength(m), stdout);
			fputc('\n', stdout);
		}
		jsMsgMetaData_Destroy(meta);
		natsMsg_Destroy(m);
	}
	natsSubscription_Destroy(sub);
	jsStreamInfo_Destroy(si);
	if (s != NATS_OK) {
		fprintf(stderr, "nats_pub: reading %s after seq %llu of %llu: %s\n", stream,
			(unsigned long long)seq, (unsigned long long)last, natsStatus_GetText(s));
		return 1;
	}
	return 0;
}

/* One step-down request a stream; what each answered on stderr. */
static int step_down(const char *servers, char **streams, int n)
{
	natsConnection *nc = NULL;
	natsStatus s = natsConnection_ConnectTo(&nc, servers);
	if (s != NATS_OK) {
		fprintf(stderr, "nats_pub: connecting: %s\n", natsStatus_GetText(s));
		return 1;
	}
	for (int i = 0; i < n; i++) {
		char subject[256];
		snprintf(subject, sizeof subject, "$JS.API.STREAM.LEADER.STEPDOWN.%s", streams[i]);
		natsMsg *reply = NULL;
		s = natsConnection_RequestString(&reply, nc, subject, "", 2000);
		if (s == NATS_OK)
			fprintf(stderr, "nats_pub: step down %s: %.*s\n", streams[i],
				natsMsg_GetDataLength(reply), natsMsg_GetData(reply));
		else
			fprintf(stderr, "nats_pub: step down %s: %s\n", streams[i],
				natsStatus_GetText(s));
		natsMsg_Destroy(reply);
	}
	natsConnection_Destroy(nc);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc >= 4 && strcmp(argv[2], "--stepdown") == 0)
		return step_down(argv[1], argv + 3, argc - 3);
	if (argc == 4 && strcmp(argv[2], "--read") == 0) {
		natsConnection *nc = NULL;
		jsCtx *js = NULL;
		natsStatus s = natsConnection_ConnectTo(&nc, argv[1]);
		if (s == NATS_OK)
			s = natsConnection_JetStream(&js, nc, NULL);
		if (s != NATS_OK) {
			fprintf(stderr, "nats_pub: connecting: %s\n", natsStatus_GetText(s));
			return 1;
		}
		int rc = read_stream(js, argv[3]);
		jsCtx_Destroy(js);
		natsConnection_Destroy(nc);
		return rc;
	}
	if (argc != 3) {
		fprintf(stderr, "usage: nats_pub SERVERS FILE | nats_pub SERVERS --read STREAM | "
				"nats_pub SERVERS --stepdown STREAM...\n");
		return 2;
	}
	FILE *f = fopen(argv[2], "rb");
	if (!f) {
		perror(argv[2]);
		return 1;
	}
	natsOptions *opts = NULL;
	natsConnection *nc = NULL;
	jsCtx *js = NULL;
	natsStatus s = natsOptions_Create(&opts);
	if (s == NATS_OK)
		s = natsOptions_SetURL(opts, argv[1]);
	if (s == NATS_OK)
		s = natsConnection_Connect(&nc, opts);
	if (s == NATS_OK)
		s = natsConnection_JetStream(&js, nc, NULL);
	if (s != NATS_OK) {
		fprintf(stderr, "nats_pub: connecting: %s\n", natsStatus_GetText(s));
		return 1;
	}
	char line[8192];
	char names[64][128], values[64][1024];
	int nheaders = 0;
	long published = 0;
	while (s == NATS_OK && fgets(line, sizeof line, f)) {
		line[strcspn(line, "\n")] = '\0';
		if (line[0] == 'H' && line[1] == ' ') {
			char *name = line + 2, *sp = strchr(name, ' ');
			if (!sp || nheaders == 64) {
				fprintf(stderr, "nats_pub: bad header line: %s\n", line);
				return 1;
			}
			*sp = '\0';
			snprintf(names[nheaders], sizeof names[0], "%s", name);
			snprintf(values[nheaders], sizeof values[0], "%s", sp + 1);
			nheaders++;
			continue;
		}
		char subject[256];
		long len;
		if (sscanf(line, "M %255s %ld", subject, &len) != 2 || len < 0) {
			fprintf(stderr, "nats_pub: bad line: %s\n", line);
			return 1;
		}
		char *payload = malloc((size_t)len + 1);
		if (!payload || fread(payload, 1, (size_t)len, f) != (size_t)len ||
		    fgetc(f) != '\n') {
			fprintf(stderr, "nats_pub: short payload for %s\n", subject);
			return 1;
		}
		natsMsg *m = NULL;
		s = natsMsg_Create(&m, subject, NULL, payload, (int)len);
		for (int i = 0; s == NATS_OK && i < nheaders; i++)
			s = natsMsgHeader_Add(m, names[i], values[i]);
		jsPubAck *pa = NULL;
		jsErrCode jerr = 0;
		if (s == NATS_OK)
			s = js_PublishMsg(&pa, js, m, NULL, &jerr);
		if (s != NATS_OK)
			fprintf(stderr, "nats_pub: publishing to %s: %s (%d)\n", subject,
				natsStatus_GetText(s), (int)jerr);
		jsPubAck_Destroy(pa);
		natsMsg_Destroy(m);
		free(payload);
		nheaders = 0;
		published++;
	}
	fclose(f);
	jsCtx_Destroy(js);
	natsConnection_Destroy(nc);
	natsOptions_Destroy(opts);
	if (s != NATS_OK)
		return 1;
	printf("%ld\n", published);
	return 0;
}
