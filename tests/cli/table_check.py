#!/usr/bin/env python3
"""table_check.py - what a terminal showed of one table of a keel read,
held against the read's JSON document (tests/cli_terminal_fit.sh).

usage: table_check.py SCREEN JSON TITLE LIST COLUMN=FIELD... [--width N]
       table_check.py SCREEN JSON --labels LABEL=PATH... [--width N]

SCREEN is the terminal's text, JSON the document the same read prints
piped. The table titled TITLE ("facts:"; "-" for a table that is the
whole screen, as stats's, its heading the first line) must have one row
per element of the document's LIST ("facts": an object or an array), in
order; each row is cut into cells at the columns where the heading's
cells begin, and the cell under each COLUMN heading ("_" for a blank:
VALID_FROM) must be the element's FIELD as the text form spells it:
whole, or a prefix of it followed by "…" when the terminal was too
narrow. A cell that begins with blanks is right-aligned (a count): it
must end where its heading ends.

With --labels the screen is labelled lines (why's): the line "LABEL:"
("_" for a blank: asserted_by) must hold the document's value at PATH
(dotted: event.envelope), spelt and cut as a cell is. With --width, no
line is wider than N columns. Exits 1 naming the first difference.
"""
import json
import re
import sys
import unicodedata

ELLIPSIS = "\u2026"


class Raw(str):
    """A number as the document wrote it (51.352540 stays so)."""


def compact(v):
    """JSON text as Keel stores a value: compact, numbers as written."""
    if isinstance(v, Raw):
        return str(v)
    if isinstance(v, dict):
        return "{" + ",".join(compact(k) + ":" + compact(x) for k, x in v.items()) + "}"
    if isinstance(v, list):
        return "[" + ",".join(compact(x) for x in v) + "]"
    return json.dumps(v, ensure_ascii=False)


def cols(s):
    """Terminal columns of s (East Asian wide: 2; combining: 0)."""
    w = 0
    for ch in s:
        if unicodedata.combining(ch):
            continue
        w += 2 if unicodedata.east_asian_width(ch) in "WF" else 1
    return w


def spell(v, field):
    """A value as the text form writes it (docs/cli.md, "On a terminal")."""
    if field in ("value", "envelope"):
        return compact(v)
    if v is None:
        return "-"
    if v is True:
        return "yes"
    if v is False:
        return "no"
    if isinstance(v, dict) and "id" in v and "source" in v:
        return v["id"] + (" (from %s)" % v["source"] if v["source"] else "")
    if isinstance(v, Raw):
        return str(v)
    if isinstance(v, str):
        return json.dumps(v, ensure_ascii=False)[1:-1]
    return compact(v)


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def main():
    args = sys.argv[1:]
    width = None
    if "--width" in args:
        i = args.index("--width")
        width = int(args[i + 1])
        del args[i:i + 2]
    screen_path, json_path, title, list_name = args[:4]
    wants_args = args[4:]
    wants = [(c.replace("_", " "), f) for c, f in (a.split("=", 1) for a in wants_args)]
    lines = open(screen_path, encoding="utf-8").read().split("\n")
    doc = json.load(open(json_path, encoding="utf-8"), parse_float=Raw, parse_int=Raw)

    if width is not None:
        for n, line in enumerate(lines, 1):
            if cols(line) > width:
                fail("line %d is %d columns wide, more than %d: %r" % (n, cols(line), width, line))

    if title == "--labels":
        check_labels(lines, doc, [list_name] + wants_args)
        return

    rows = doc[list_name]
    if isinstance(rows, dict):  # show's facts: predicate -> row
        rows = [dict(v, predicate=k) for k, v in rows.items()]
    if title == "-":
        at = -1
    else:
        try:
            at = lines.index(title)
        except ValueError:
            fail("no %r line on the screen:\n%s" % (title, "\n".join(lines)))
    head = lines[at + 1]
    # A heading cell begins the line, or follows the indent or two blanks.
    starts = [m.start() for m in re.finditer(r"(?:^|(?<=  ))\S", head)]
    heads = []
    for i, s in enumerate(starts):
        end = starts[i + 1] if i + 1 < len(starts) else len(head)
        heads.append(head[s:end].strip())
    body = lines[at + 2:at + 2 + len(rows)]
    if len(body) < len(rows) or (at + 2 + len(rows) < len(lines) and
                                 lines[at + 2 + len(rows)].startswith("  ") and
                                 lines[at + 2 + len(rows)].strip()):
        fail("table %r: not one line per element of %r (%d):\n%s" %
             (title, list_name, len(rows), "\n".join(lines[at:at + 3 + len(rows)])))
    for column, field in wants:
        # a heading may itself be cut: "ASSERTED BY" shown as "ASSER…"
        idx = [i for i, h in enumerate(heads)
               if h == column or (h.endswith(ELLIPSIS) and column.startswith(h[:-1]))]
        if not idx:
            fail("no column %r in the heading %r" % (column, head))
        c = idx[0]
        for r, (line, row) in enumerate(zip(body, rows)):
            # cells are cut at character, not column, offsets: the tests'
            # tables hold no wide characters
            end = starts[c + 1] if c + 1 < len(starts) else len(line)
            cell = line[starts[c]:end].rstrip()
            if cell.startswith(" "):  # right-aligned: ends under its heading's end
                if len(cell) != len(heads[c]):
                    fail("row %d of %r, column %r: %r is not aligned under %r\n%s" %
                         (r + 1, title, column, cell.strip(), heads[c], line))
                cell = cell.strip()
            want = spell(row[field], field)
            if not same(cell, want):
                fail("row %d of %r, column %r: %r, the document says %r\n%s" %
                     (r + 1, title, column, cell, want, line))


def same(cell, want):
    """A cell shows want: whole, or cut with "…" after a prefix of it."""
    if cell == want:
        return True
    return cell.endswith(ELLIPSIS) and len(cell) > 1 and want.startswith(cell[:-1])


def check_labels(lines, doc, wants):
    """Each "label:  value" line holds the document's value at its path."""
    for a in wants:
        label, path = a.split("=", 1)
        label = label.replace("_", " ") + ":"
        v = doc
        for key in path.split("."):
            v = v[key]
        found = [l for l in lines if l.startswith(label + " ")]
        if not found:
            fail("no %r line on the screen:\n%s" % (label, "\n".join(lines)))
        shown = found[0][len(label):].strip()
        want = spell(v, path.split(".")[-1])
        if not same(shown, want):
            fail("line %r: %r, the document says %r" % (label, shown, want))


main()
