"""`python -m engine users ...`: who may log in to the app and with which role
(engine.store.users). A password is read from standard input (asked for without echo at a
terminal, else its first line), never from the command line, where `ps` and the shell's
history would show it."""

from __future__ import annotations

import argparse
import getpass
import sys

from engine.errors import ConfigError
from engine.store.users import ENV, ROLES, Users, users_file


def add_parser(sub) -> None:
    users = sub.add_parser("users", help="who may log in, and with which role")
    users.add_argument("--file", default="", help=f"the users file (default: ${ENV})")
    steps = users.add_subparsers(dest="step", required=True)
    add = steps.add_parser("add", help="a new user; the password is read from standard input")
    add.add_argument("name")
    add.add_argument("--role", default="viewer", choices=ROLES)
    steps.add_parser("list", help="every user and their role")
    remove = steps.add_parser("remove", help="take a user's login away")
    remove.add_argument("name")
    role = steps.add_parser("role", help="change a user's role")
    role.add_argument("name")
    role.add_argument("role", choices=ROLES)
    passwd = steps.add_parser("passwd", help="a user's new password, from standard input; "
                                             "their sessions end")
    passwd.add_argument("name")


def users(args: argparse.Namespace) -> int:
    path = users_file(args.file)
    if path is None:
        raise ConfigError(f"Name the users file: --file FILE, or ${ENV}.")
    people = Users(path)
    if args.step == "add":
        added = people.add(args.name, _password(), args.role)
        print(f"user {added.name} added as {added.role} to {path}")
    elif args.step == "list":
        for user in people.list():
            print(f"{user.name}\t{user.role}\t{user.created}")
    elif args.step == "remove":
        people.remove(args.name)
        print(f"user {args.name} removed from {path}; their sessions have ended")
    elif args.step == "passwd":
        changed = people.set_password(args.name, _password())
        print(f"user {changed.name} has a new password; their sessions have ended")
    else:
        changed = people.set_role(args.name, args.role)
        print(f"user {changed.name} is now {changed.role}; their sessions have ended")
    return 0


def _password() -> str:
    if sys.stdin.isatty():
        password = getpass.getpass("Password: ")
        if getpass.getpass("Again: ") != password:
            raise ConfigError("The two passwords differ; nothing was changed.")
        return password
    return sys.stdin.readline().rstrip("\r\n")
