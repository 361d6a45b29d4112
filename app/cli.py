"""The `signoff-bot` command line."""

from __future__ import annotations

import argparse
import json
import sys


def _replay(args: argparse.Namespace) -> int:
    from .replay import replay

    try:
        result = replay(args.world, args.pr)
    except Exception as exc:  # noqa: BLE001 - one line, non-zero: the replay itself could not run
        print(f"signoff-bot replay: {type(exc).__name__}: {exc}".splitlines()[0], file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(result.to_json(), ensure_ascii=False))
    else:
        print(result.to_text())
    return 0


def _fake_github(args: argparse.Namespace) -> int:
    from .fake_github import main as fake_main

    return fake_main(args.rest)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="signoff-bot", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("replay", help="verify a world's PR end to end against the fake GitHub")
    p.add_argument("world", nargs="?", help="world directory (default: the bundled demo world)")
    p.add_argument("--pr", type=int, help="pull request number (default: the world's only PR)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=_replay)

    p = sub.add_parser("fake-github", help="serve worlds as a fake GitHub REST API", add_help=False)
    p.add_argument("rest", nargs=argparse.REMAINDER)
    p.set_defaults(func=_fake_github)

    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
