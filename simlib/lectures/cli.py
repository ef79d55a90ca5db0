"""`python -m simlib claims [--json]` (parsed in simlib/command_line.py): every claim of the posts, judged.

Without --json: one line per claim (letter, verdict, deciding number, the claim); with --json: a
list of objects with every field of `verdicts.Claim` (claim, post, quantity, model, paper,
measured, rule, verdict, number).
"""

import json

from . import verdicts


def run(args):
    """Print the claims table; `args.json`: every field as JSON."""
    rows = verdicts.records()
    if args.json:
        print(json.dumps(rows, ensure_ascii=False, indent=1))
        return
    width = max(len(r["verdict"]) for r in rows)
    for r in rows:
        print(f"({r['claim']}) {r['verdict']:<{width}}  {r['number']:<44}  {r['post']}")
