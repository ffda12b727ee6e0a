#!/usr/bin/env python3
"""Runs one benchmark and writes what it printed into its section of BENCHMARKS.md, with what it
measures, the command that reruns it and the machine it ran on.

    python3 Benchmarks/publish.py [--name NAME] [--title TITLE] -- COMMAND [ARG ...]

COMMAND is a benchmark (`python3 Benchmarks/sftp.py --runs 2 ...`). Its standard output is the
section's body as the script printed it (its headings put under the section's), its standard
error goes to the terminal. A section is the text between `<!-- NAME -->` and `<!-- /NAME -->`;
NAME is the script's file name unless --name gives one (two sections from one script). A section
already on the page is replaced where it is, a new one goes at the end, and nothing is written
when the command fails.
"""
import argparse
import ast
import datetime
import os
import platform
import re
import shlex
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def script_of(command):
    """The benchmark's own file among the command's words (the first *.py or *.sh of Benchmarks/)."""
    for word in command:
        if word.endswith((".py", ".sh")) and os.path.exists(word):
            return word
    return None


def what(script):
    """The first sentence of the script's docstring (or of its opening comment), on one line."""
    if script is None:
        return ""
    text = open(script, encoding="utf-8").read()
    if script.endswith(".py"):
        text = ast.get_docstring(ast.parse(text)) or ""
    else:
        text = "\n".join(line[2:] for line in text.splitlines()[1:] if line.startswith("# "))
    # The issue a bench was written for is its history, not what it measures.
    text = re.sub(r" \((?:issues?|item) [^)]*\)", "", " ".join(text.split()))
    sentence = re.match(r"(.+?[.])(\s|$)", text)
    return sentence.group(1) if sentence else text


def machine():
    """Where and when: the date, the source's commit, the CPU, memory and kernel."""
    def output(*command):
        try:
            return subprocess.run(command, capture_output=True, text=True, cwd=ROOT).stdout.strip()
        except OSError:
            return ""
    model = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")), "")
    memory = round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30)
    commit = output("git", "rev-parse", "--short=7", "HEAD")
    # The page and the graph the benches draw are not the source: changes to them leave it clean.
    if output("git", "status", "--porcelain", "--", ".", ":!BENCHMARKS.md", ":!docs/scale.svg"):
        commit += " with uncommitted changes"
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    return f"{stamp}, source {commit}; {os.cpu_count()} cores ({model}), {memory} GiB, Linux {platform.release()}"


def nested(body):
    """The script's headings put under the section's own (## NAME): at least ###."""
    lines = []
    for line in body.strip("\n").splitlines():
        heading = re.match(r"(#+) (.*)", line)
        lines.append(f"{'#' * max(3, len(heading.group(1)) + 1)} {heading.group(2)}" if heading else line)
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--page", default=os.path.join(ROOT, "BENCHMARKS.md"))
    parser.add_argument("--name", help="the section's name (default: the script's file name)")
    parser.add_argument("--title", help="the section's heading (default: its name)")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    arguments = parser.parse_args()
    command = arguments.command[1:] if arguments.command[:1] == ["--"] else arguments.command
    if not command:
        parser.error("no benchmark command after --")
    script = script_of(command)
    name = arguments.name or (os.path.basename(script) if script else command[0])
    # Where and when, from which commit: as the bench starts.
    ran_on = machine()
    ran = subprocess.run(command, stdout=subprocess.PIPE, text=True)
    if ran.returncode != 0:
        sys.stdout.write(ran.stdout)
        sys.exit(f"publish: {shlex.join(command)} exited {ran.returncode}; {arguments.page} left as it was")
    sys.stdout.write(ran.stdout)
    rerun = shlex.join(["python3", os.path.relpath(__file__, ROOT), *(["--name", name] if arguments.name else []),
                        *(["--title", arguments.title] if arguments.title else []), "--", *command])
    section = "\n".join([
        f"<!-- {name} -->",
        f"## {arguments.title or name}",
        "",
        *([what(script), ""] if what(script) else []),
        f"Rerun: `{rerun}`",
        "",
        f"Ran: {ran_on}.",
        "",
        nested(ran.stdout),
        f"<!-- /{name} -->",
    ])
    page = open(arguments.page, encoding="utf-8").read() if os.path.exists(arguments.page) else "# Benchmarks\n"
    found = re.search(rf"<!-- {re.escape(name)} -->\n.*?<!-- /{re.escape(name)} -->", page, flags=re.S)
    if found:
        page = page[:found.start()] + section + page[found.end():]
    else:
        page = page.rstrip("\n") + "\n\n" + section + "\n"
    with open(arguments.page + ".new", "w", encoding="utf-8") as new:
        new.write(page)
    os.replace(arguments.page + ".new", arguments.page)
    print(f"publish: section {name} of {os.path.relpath(arguments.page)} written", file=sys.stderr)


if __name__ == "__main__":
    main()
