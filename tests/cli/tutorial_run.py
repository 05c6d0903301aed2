#!/usr/bin/env python3
"""tutorial_run.py PAGE DIR - runs a page of the docs as a reader would and
checks what it printed (tests/docs_tutorial.sh).

The page's fenced blocks are read in order:

* ```LANG file=NAME   the file NAME, written into DIR as the reader saves it;
* ```LANG excerpt=NAME a part of NAME shown on its own: it must be in NAME
  (blanks aside), so the step-by-step text cannot drift from the file;
* ```console          commands after "$ ", each followed by what it prints
  (standard output and error, as a terminal shows them). An expected line
  may hold "..." for text that differs from run to run (the moment a
  command ran, a rate); everything else must be exactly as printed.

Every command runs in one bash, in DIR, on a pseudo-terminal (script(1))
with no size of its own, so keel takes $COLUMNS (120) and starts no pager:
the text form a person reads, at the width the page says. `keel` is the
binary under test ($KEEL, first on PATH). A `keel serve` command is started
in the background on a free port instead of the page's; after the last
command, the http://127.0.0.1:8080/ addresses the page names are fetched
on that port (each must answer 200) and the server is stopped. Exits 1
naming the first difference.
"""
import os
import re
import shlex
import subprocess
import sys

MARK = "@@tutorial@@"


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def blocks(text):
    """(info, lines) of each fenced block, in order."""
    out, cur, info = [], None, None
    for line in text.split("\n"):
        if cur is None and line.startswith("```"):
            cur, info = [], line[3:].strip()
        elif cur is not None and line == "```":
            out.append((info, cur))
            cur = None
        elif cur is not None:
            cur.append(line)
    if cur is not None:
        fail("a fenced block is not closed")
    return out


def attr(info, name):
    m = re.search(r"\b%s=(\S+)" % name, info)
    return m.group(1) if m else None


def flat(s):
    return re.sub(r"\s+", "", s)


def matches(want, got):
    """An expected line against a printed one; "..." matches anything."""
    pattern = ".*".join(re.escape(p) for p in want.split("..."))
    return re.fullmatch(pattern, got) is not None


def terminal_lines(raw):
    """What a terminal shows of raw output: CRLF as newlines, a line a
    progress redraw rewrote (text, CR, text) as its last text."""
    shown = []
    for line in raw.replace("\r\n", "\n").split("\n"):
        shown.append(line.split("\r")[-1])
    return shown


def main():
    page, work = sys.argv[1:3]
    keel = os.environ["KEEL"]
    text = open(page, encoding="utf-8").read()
    files, excerpts, commands = {}, [], []
    for info, lines in blocks(text):
        name = attr(info, "file")
        if name:
            files[name] = "\n".join(lines) + "\n"
            with open(os.path.join(work, name), "w", encoding="utf-8") as f:
                f.write(files[name])
            continue
        name = attr(info, "excerpt")
        if name:
            excerpts.append((name, "\n".join(lines)))
            continue
        if info.split() and info.split()[0] == "console":
            cmd = None
            for line in lines:
                if line.startswith("$ "):
                    cmd = [line[2:], []]
                    commands.append(cmd)
                elif cmd is None:
                    fail("console block with output before any command: %r" % line)
                else:
                    cmd[1].append(line)
    if not commands:
        fail("no commands in " + page)
    for name, excerpt in excerpts:
        if name not in files:
            fail("an excerpt of %s, which the page never writes" % name)
        if flat(excerpt) not in flat(files[name]):
            fail("this excerpt is not in %s:\n%s" % (name, excerpt))

    bindir = os.path.join(work, ".bin")
    os.makedirs(bindir, exist_ok=True)
    os.symlink(keel, os.path.join(bindir, "keel"))
    urls = sorted(set(re.findall(r"<(http://127\.0\.0\.1:8080/[^>]*)>", text)))
    served = False
    script = ["set -u", "cd " + shlex.quote(work)]
    for i, (cmd, _) in enumerate(commands):
        script.append("echo %s%d" % (MARK, i))
        if re.match(r"keel serve\b", cmd):
            # In the background, on a free port, away from the terminal.
            served = True
            script += [re.sub(r"--listen \S+", "--listen 127.0.0.1:0", cmd) +
                       " --quiet </dev/null >/dev/null 2>.serve.log &",
                       "serve_pid=$!",
                       "for _ in $(seq 200); do grep -q '(port ' .serve.log && break; sleep 0.05; done",
                       "port=$(sed -n 's/.*(port \\([0-9]*\\)).*/\\1/p' .serve.log)"]
            continue
        script.append(cmd + " 2>&1")
    if served:
        # The page's addresses on the server's port, answered while it runs.
        for url in urls:
            # (the page's addresses hold no quote, $ or backslash)
            script.append("curl -s -o /dev/null -w '%%{http_code} %%{url_effective}\\n' \"%s\" >>.urls" %
                          url.replace(":8080/", ":$port/"))
        script += ["kill -TERM $serve_pid", "wait $serve_pid"]
    script.append("echo %send" % MARK)
    with open(os.path.join(work, ".tutorial.sh"), "w") as f:
        f.write("\n".join(script) + "\n")

    env = dict(os.environ, PATH=bindir + os.pathsep + os.environ["PATH"], COLUMNS="120")
    for k in ("LINES", "KEEL_STORE", "KEEL_PAGER", "PAGER"):
        env.pop(k, None)
    run = subprocess.run(["script", "-qec", "bash " + shlex.quote(os.path.join(work, ".tutorial.sh")),
                          "/dev/null"], stdin=subprocess.DEVNULL, capture_output=True, env=env,
                         timeout=300)
    shown = terminal_lines(run.stdout.decode("utf-8", "replace"))
    outputs, cur = {}, None
    for line in shown:
        if line.startswith(MARK):
            cur = line[len(MARK):]
            outputs[cur] = []
        elif cur is not None:
            outputs[cur].append(line)
    if "end" not in outputs:
        fail("the commands did not run to the end:\n" + "\n".join(shown[-20:]))
    for i, (cmd, want) in enumerate(commands):
        got = outputs.get(str(i), [])
        while want and want[-1] == "":
            want = want[:-1]
        while got and got[-1] == "":
            got = got[:-1]
        if len(got) != len(want) or not all(matches(w, g.rstrip()) for w, g in zip(want, got)):
            first = next((k for k, (w, g) in enumerate(zip(want, got)) if not matches(w, g.rstrip())),
                         min(len(want), len(got)))
            fail("$ %s\nprinted (line %d differs):\n%s\n--- the page says:\n%s" %
                 (cmd, first + 1, "\n".join(got), "\n".join(want)))
    if served:
        if not urls:
            fail("the page starts keel serve but names no address of it")
        answers = open(os.path.join(work, ".urls")).read().split("\n")[:-1]
        if len(answers) != len(urls) or not all(a.startswith("200 ") for a in answers):
            fail("the page's addresses: %s (server log: %s)" %
                 (answers, open(os.path.join(work, ".serve.log")).read()))
    print("ok: %d commands, %d files, %d excerpts, %d addresses" %
          (len(commands), len(files), len(excerpts), len(urls) if served else 0))


main()
