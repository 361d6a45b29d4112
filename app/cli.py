"""The `signoff-bot` command line."""

from __future__ import annotations

import argparse
import json
import sys


def _replay(args: argparse.Namespace) -> int:
    from .judge import Judge
    from .offline.replay import replay

    judge = Judge(1)  # the checks as the App runs them: in a process of their own, within the default budget
    try:
        result = replay(args.world, args.pr, judge)
    except Exception as exc:  # noqa: BLE001 - one line, non-zero: the replay itself could not run
        print(f"signoff-bot replay: {type(exc).__name__}: {exc}".splitlines()[0], file=sys.stderr)
        return 1
    finally:
        judge.close()
    if args.json:
        print(json.dumps(result.to_json(), ensure_ascii=False))
    else:
        print(result.to_text())
    return 0


def _verify(args: argparse.Namespace) -> int:
    """Print the verdicts; exit 0 PASS, 1 REJECTED, 3 NEEDS A MAINTAINER, 2 could not run (app/action/verify.py)."""
    import asyncio

    from .action.event import nothing_to_verify, verify_event
    from .action.verify import COULD_NOT_RUN, CannotRun, config_path, exit_code, report, verify_pr, write_output

    try:
        if args.event is not None and args.pr is not None:
            raise CannotRun("give a pull request or --event FILE, not both")
        config = config_path(args.config)
        if args.event is not None:
            outcome = asyncio.run(verify_event(args.event, args.publish, config=config))
            if isinstance(outcome, str):
                print(nothing_to_verify(outcome))
                write_output([])
                return 0
            results, stats = outcome
        elif args.pr is not None:
            results, stats = asyncio.run(verify_pr(args.pr, args.publish, config))
        else:
            raise CannotRun("give a pull request (https://github.com/OWNER/REPO/pull/N or OWNER/REPO#N) or --event FILE")
    except CannotRun as exc:
        print(f"signoff-bot verify: {str(exc).splitlines()[0] if str(exc) else 'cannot run'}", file=sys.stderr)
        return COULD_NOT_RUN
    except Exception as exc:  # noqa: BLE001 - one line, exit 2: the verification itself could not run
        print(f"signoff-bot verify: {type(exc).__name__}: {exc}".splitlines()[0], file=sys.stderr)
        return COULD_NOT_RUN
    if not results:
        print(nothing_to_verify("no job it caused verified a pull request (a comment that is no sign-off, or a "
                                "workflow that is not the sweep)"))
        write_output([])
        return 0
    print(report(results, stats, args.json, args.publish))
    write_output(results)
    return exit_code(results)


def _backtest(args: argparse.Namespace) -> int:
    from .history import backtest as bt
    from .history.gitrepo import GitError

    try:
        since, until = bt.parse_date(args.since), bt.parse_date(args.until)
        rows = bt.backtest(args.repo, since, until, progress=bt.progress_line())
    except (ValueError, GitError) as exc:
        print(f"signoff-bot backtest: {exc}", file=sys.stderr)
        return 2
    for row in rows:
        if row.error:
            print(f"signoff-bot backtest: #{row.pr.number}: {row.error}", file=sys.stderr)
    if args.report:
        with open(args.report, "w", encoding="utf-8") as out:
            out.write(bt.report(rows, args.repo))
    print(json.dumps(bt.to_json(rows), ensure_ascii=False) if args.json else bt.table(rows))
    return 0


def _fake_github(args: argparse.Namespace) -> int:
    from .fake_github import main as fake_main

    return fake_main(args.rest)


def _serve(args: argparse.Namespace) -> int:
    import uvicorn

    from .observability import setup_logging
    from .settings import ConfigError, Settings, redacted
    from .web.server import create_app

    try:
        settings = Settings.from_env()
    except ConfigError as exc:
        print(f"signoff-bot serve: {exc}", file=sys.stderr)
        return 2
    setup_logging(settings.log_level)
    try:
        app = create_app(settings)
    except Exception as exc:  # noqa: BLE001 - one line, non-zero: the database cannot be opened or migrated
        print(f"signoff-bot serve: cannot open the database {redacted(settings.db_path)}: "
              f"{type(exc).__name__}: {exc}".splitlines()[0], file=sys.stderr)
        return 1
    # access_log=False: uvicorn would otherwise turn its access log back on (setup_logging turns it off), a
    # second log line for every delivery
    uvicorn.run(app, host=args.host, port=args.port, log_config=None,
                log_level=settings.log_level.lower(), access_log=False)
    return 0


def _audit(args: argparse.Namespace) -> int:
    import os

    from .settings import redacted
    from .store.choose import open_store
    from .store.sql import POSTGRES_SCHEMES, sqlite_path

    db = args.db or os.environ.get("SIGNOFF_BOT_DB", "./signoff-bot.db")
    if not db.startswith(POSTGRES_SCHEMES) and not os.path.exists(sqlite_path(db)):
        print(f"signoff-bot audit: no database at {redacted(db)}", file=sys.stderr)
        return 1
    store = open_store(db)
    try:
        records = store.audit(args.repo, args.pr)
    finally:
        store.close()
    for record in records:
        record["published"] = json.loads(record["published"])
        print(json.dumps(record, sort_keys=True) if args.json else
              f"#{record['id']} {record['repo']}#{record['pr']} {record['head_sha'][:8]} {record['verdict']} "
              f"delivery={record['delivery']} inputs={record['inputs_digest'][:12]} "
              f"published={','.join(record['published'].get('writes', []))}")
    return 0


def _docs(args: argparse.Namespace) -> int:
    from pathlib import Path

    from .rule_docs import COMMAND, RuleDocError, render

    try:
        text = render()
    except RuleDocError as exc:
        print(f"signoff-bot docs: {exc}", file=sys.stderr)
        return 2
    out = Path(args.output)
    current = out.read_text(encoding="utf-8") if out.is_file() else None
    if args.check:
        if current != text:
            print(f"signoff-bot docs: {out} is {'stale' if current is not None else 'missing'}: run `{COMMAND}`",
                  file=sys.stderr)
            return 1
        return 0
    if current != text:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text, encoding="utf-8")
    print(f"{out}: {'written' if current != text else 'up to date'}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="signoff-bot", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("replay", help="verify a world's PR end to end against the fake GitHub")
    p.add_argument("world", nargs="?", help="world directory (default: the bundled demo world)")
    p.add_argument("--pr", type=int, help="pull request number (default: the world's only PR)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=_replay)

    p = sub.add_parser("verify", help="verify a pull request, or a GitHub Actions event, as the App does",
                       description="Credentials: GITHUB_TOKEN or GH_TOKEN, else the App's settings; API: "
                                   "SIGNOFF_BOT_GITHUB_URL. Exit 0 PASS, 1 REJECTED, 3 NEEDS A MAINTAINER, "
                                   "2 could not run.")
    p.add_argument("pr", nargs="?", help="https://github.com/OWNER/REPO/pull/N or OWNER/REPO#N")
    p.add_argument("--event", metavar="FILE", help="a GitHub Actions event payload ($GITHUB_EVENT_PATH), with "
                                                   "GITHUB_EVENT_NAME and GITHUB_REPOSITORY")
    p.add_argument("--publish", action="store_true", help="post what the App posts (default: a dry run)")
    p.add_argument("--config", metavar="PATH", default=".github/signoff-bot.yml",
                   help="the repository's policy file, read at the tip of the PR's base branch as the App reads "
                        "it (default: .github/signoff-bot.yml)")
    p.add_argument("--json", action="store_true", help="print replay's JSON object (one line a PR)")
    p.set_defaults(func=_verify)

    p = sub.add_parser("backtest", help="what the content checks would have said on a repository's merged PRs")
    p.add_argument("repo", help="a local clone of the repository")
    p.add_argument("--since", help="first merge date (YYYY-MM-DD, UTC) to include")
    p.add_argument("--until", help="last merge date (YYYY-MM-DD, UTC) to include")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--report", metavar="FILE.md", help="also write a Markdown report")
    p.set_defaults(func=_backtest)

    p = sub.add_parser("fake-github", help="serve worlds as a fake GitHub REST API", add_help=False)
    p.add_argument("rest", nargs=argparse.REMAINDER)
    p.set_defaults(func=_fake_github)

    p = sub.add_parser("serve", help="run the GitHub App (webhook server and workers)")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8000)
    p.set_defaults(func=_serve)

    p = sub.add_parser("audit", help="print the append-only audit trail of decisions")
    p.add_argument("--pr", type=int)
    p.add_argument("--repo")
    p.add_argument("--db", help="SQLite file or postgresql:// URL (default: $SIGNOFF_BOT_DB or ./signoff-bot.db)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_audit)

    p = sub.add_parser("docs", help="write documentation generated from the code")
    p.add_argument("what", choices=["rules"], help="rules: docs/rules.md, from the rules' docstrings")
    p.add_argument("--output", default="docs/rules.md", help="where to write it (default: docs/rules.md)")
    p.add_argument("--check", action="store_true", help="write nothing; exit 1 when the file is stale")
    p.set_defaults(func=_docs)

    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
