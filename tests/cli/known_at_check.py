#!/usr/bin/env python3
# known_at_check.py KEEL STORE INPUT[,INPUT...] [INGEST-OPTION...]
#
# Reads known at moments inside running transactions stand: on a store
# that exists (the first answers would be "no such file"), while
# `KEEL ingest - --store STORE ...` runs, one process for each INPUT at
# once (several writers), each fed its INPUT over about FEED_SECONDS
# whatever the build's speed (so their transactions hold many batches and
# a read often comes while one or more are open), reads `keel stats`
# and `keel show` of a vehicle known at moments just past (2 ms ago, the
# time of the last answer, a moment since the start), each answer kept;
# once the ingest has ended, reads each moment again: every answer must be
# the same (docs/semantics.md, "Known-at answers stand"). Exits 1 with the
# answers that changed; prints how many reads ran and the longest wait.
import datetime
import random
import subprocess
import sys
import threading
import time

keel, store, paths = sys.argv[1:4]
ingest_opts = sys.argv[4:]
random.seed(7)


def stamp(d):
    return d.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def now():
    return datetime.datetime.now(datetime.timezone.utc)


def read(args, moment):
    r = subprocess.run([keel] + args + ["--known-at", moment, "--json", "--store", store],
                       capture_output=True, text=True)
    # an error's message: e.g. before the store's first commit, "no such file"
    return r.returncode, r.stdout if r.returncode == 0 else r.stderr


# (show's valid time fixed, so that only known_at can change its answer)
reads = [["stats"], ["show", "tenant-00", "vehicle:V-0001", "--at", "2030-01-01T00:00:00Z"]]
start = now()
FEED_SECONDS = 6.0


def feed(proc, path):
    lines = open(path, "rb").readlines()
    chunk = max(1, len(lines) // 400)
    for i in range(0, len(lines), chunk):
        proc.stdin.write(b"".join(lines[i:i + chunk]))
        proc.stdin.flush()
        time.sleep(FEED_SECONDS / 400)
    proc.stdin.close()


ingests, feeders = [], []
for path in paths.split(","):
    proc = subprocess.Popen([keel, "ingest", "-", "--store", store, "--quiet"] + ingest_opts,
                            stdin=subprocess.PIPE)
    ingests.append(proc)
    feeders.append(threading.Thread(target=feed, args=(proc, path)))
    feeders[-1].start()
answers, longest, last = [], 0.0, start
while any(i.poll() is None for i in ingests):
    since = (now() - start).total_seconds()
    moments = [now() - datetime.timedelta(milliseconds=2), last,
               start + datetime.timedelta(seconds=random.uniform(0, since))]
    for args in reads:
        for m in moments:
            t0 = time.monotonic()
            answers.append((args, stamp(m), read(args, stamp(m))))
            longest = max(longest, time.monotonic() - t0)
    last = now()
for f in feeders:
    f.join()
for i in ingests:
    if i.returncode != 0:
        sys.exit("FAIL: keel ingest exited %d" % i.returncode)
failed = [(a, m, f) for a, m, f in answers if f[0] != 0]
for args, moment, first in failed[:5]:
    print("FAIL: keel %s known at %s during the ingest: exit %d: %s" %
          (" ".join(args), moment, first[0], first[1].strip()))
changed = 0
for args, moment, first in answers:
    later = read(args, moment)
    if later != first:
        changed += 1
        print("FAIL: keel %s known at %s changed:\n  %s\n  %s" %
              (" ".join(args), moment, first[1][:300].strip(), later[1][:300].strip()))
print("%d reads during the ingest, %d changed; the longest took %.2f s" %
      (len(answers), changed, longest))
if len(answers) < 6:
    sys.exit("FAIL: only %d reads during the ingest: it ended too soon to test" % len(answers))
sys.exit(1 if changed or failed else 0)
