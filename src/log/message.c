/*
 * message.c - a message of the log as the envelope Keel logs, following
 * the CloudEvents NATS protocol binding (docs/log.md, "Messages"):
 *
 *   structured content mode (what keel publish sends): the payload is
 *   the envelope, JSON; a content-type header, if any, is not needed;
 *
 *   binary content mode (what other CloudEvents producers may send):
 *   every attribute is a "ce-NAME" header, "content-type" is the
 *   datacontenttype, and the payload is the data. It is written as the
 *   structured envelope by the server's own code (event/binary_mode.c):
 *   the same event sent either way, or over HTTP, is the same envelope.
 *
 * A message with at least one ce- header is binary. Header names are
 * compared without regard to case, as the binding's HTTP cousin does.
 */
#include <stdlib.h>
#include <strings.h>

#include "event/binary_mode.h"
#include "event/media_type.h"
#include "log.h"

int keel_log_message_envelope(natsMsg *m, struct keel_ce_binary *b, const char **text,
			      size_t *len, struct keel_buf *err)
{
	const char **keys = NULL;
	int nkeys = 0;
	const char *content_type = NULL;
	bool binary = false;
	if (natsMsgHeader_Keys(m, &keys, &nkeys) == NATS_OK) {
		for (int i = 0; i < nkeys; i++) {
			if (strncasecmp(keys[i], "ce-", 3) == 0)
				binary = true;
			else if (strcasecmp(keys[i], "content-type") == 0)
				natsMsgHeader_Get(m, keys[i], &content_type);
		}
	}
	if (!binary) {
		free((void *)keys);
		*text = natsMsg_GetData(m);
		*len = (size_t)natsMsg_GetDataLength(m);
		if (!*text)
			*text = "";
		return 0;
	}
	keel_ce_binary_free(b);
	keel_ce_binary_init(b);
	bool ok = true;
	for (int i = 0; ok && i < nkeys; i++) {
		const char *value = NULL;
		if (strncasecmp(keys[i], "ce-", 3) != 0)
			continue;
		natsMsgHeader_Get(m, keys[i], &value);
		ok = keel_ce_binary_header(b, keys[i], value);
	}
	free((void *)keys);
	if (ok)
		ok = keel_ce_binary_attributes(b, content_type);
	if (ok) {
		struct keel_media_type mt;
		/* as the server decides: JSON data only when the content type
		 * says so, else the bytes, base64 */
		bool json = content_type && keel_media_type_parse(content_type, &mt) &&
			    keel_media_type_is_json(&mt);
		ok = keel_ce_binary_data(b, natsMsg_GetData(m),
					 (size_t)natsMsg_GetDataLength(m), json);
	}
	if (!ok) {
		keel_buf_adds(err, "binary content mode: ");
		keel_buf_add(err, b->err.data, b->err.len);
		return KEEL_EREJECTED;
	}
	*text = b->json.data;
	*len = b->json.len;
	return 0;
}
