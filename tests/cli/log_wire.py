#!/usr/bin/env python3
"""Messages for tests/nats_pub.c: NDJSON envelopes as a CloudEvents producer
that is not Keel would put them on a Keel log (docs/log.md, "Messages").

  log_wire.py [--tenant-prefix X] STREAM PARTITIONS MODE IN WIRE [EXPECTED]

Each envelope of IN goes to subject STREAM.P, P being its tenant's
partition, computed here from the documented definition (FNV-1a 32 of the
tenant's UTF-8 bytes, modulo PARTITIONS), not by Keel. MODE:

  structured  the envelope as the payload, content-type
              application/cloudevents+json
  binary      every attribute but data as a ce- header (percent-encoded
              where it is not printable ASCII, and '%'), content-type
              application/json, the data's JSON text (as written in IN)
              as the payload
  mixed       binary for every third envelope, structured otherwise

--tenant-prefix renames each tenant "tenant-NN" to "X-NN" first (so that
events from keel generate become other tenants' than keel publish sent).
With EXPECTED, the envelope Keel logs for each message is written there, a
line each, in IN's order: the line itself for structured mode; for binary
mode the attributes in the byte order of their names, then "data" with the
data's text (event/binary_mode.c's rule). Envelopes must have a JSON
object as their data, written last (as keel generate writes them).
"""
import json
import sys


def fnv1a32(data):
    h = 2166136261
    for b in data:
        h ^= b
        h = (h * 16777619) & 0xFFFFFFFF
    return h


def pct(value):
    out = []
    for b in value.encode("utf-8"):
        if 0x20 <= b < 0x7F and b != ord("%"):
            out.append(chr(b))
        else:
            out.append("%%%02X" % b)
    return "".join(out)


def raw_data(line):
    """The text of the envelope's data member, as written (the last one)."""
    at = line.rindex('"data":')
    text = line[at + len('"data":'):].rstrip()
    assert text.endswith("}")
    text = text[:-1]
    json.loads(text)
    return text


def main():
    args = sys.argv[1:]
    prefix = None
    if args[0] == "--tenant-prefix":
        prefix = args[1]
        args = args[2:]
    stream, partitions, mode, src, wire = args[:5]
    expected = open(args[5], "w", encoding="utf-8") if len(args) > 5 else None
    partitions = int(partitions)
    with open(src, encoding="utf-8") as f, open(wire, "wb") as out:
        for n, line in enumerate(f):
            line = line.rstrip("\n")
            if not line:
                continue
            if prefix:
                line = line.replace('"tenant":"tenant-', '"tenant":"%s-' % prefix, 1)
            env = json.loads(line)
            p = fnv1a32(env["tenant"].encode("utf-8")) % partitions
            binary = mode == "binary" or (mode == "mixed" and n % 3 == 2)
            if not binary:
                payload = line.encode("utf-8")
                out.write(b"H content-type application/cloudevents+json\n")
                if expected:
                    expected.write(line + "\n")
            else:
                data = raw_data(line)
                attrs = {k: v for k, v in env.items() if k not in ("data", "datacontenttype")}
                for k, v in sorted(attrs.items()):
                    out.write(("H ce-%s %s\n" % (k, pct(v))).encode("ascii"))
                out.write(b"H content-type application/json\n")
                payload = data.encode("utf-8")
                if expected:
                    attrs["datacontenttype"] = "application/json"
                    members = [json.dumps(k) + ":" + json.dumps(v, ensure_ascii=False)
                               for k, v in sorted(attrs.items())]
                    expected.write("{" + ",".join(members) + ',"data":' + data + "}\n")
            out.write(("M %s.%d %d\n" % (stream, p, len(payload))).encode("ascii"))
            out.write(payload + b"\n")
    if expected:
        expected.close()


main()
