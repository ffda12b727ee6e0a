#!/usr/bin/env python3
"""Runs a composite GitHub Action's steps in order the way a runner does, for ActionTests.

The runner's environment is made here: GITHUB_OUTPUT (a file per step), GITHUB_ENV and GITHUB_PATH
(applied to the steps after), GITHUB_STEP_SUMMARY (one file for the job, given), RUNNER_TEMP,
GITHUB_ACTION_PATH, GITHUB_WORKSPACE (the working folder). `if:` conditions and `${{ }}` in `env:`
and `with:` are evaluated (contexts inputs, steps, github, runner; ==, !=, &&, ||, !, always(),
success(), failure()). `actions/cache/restore` and `actions/cache/save` are played against a folder
of tar files (exact key first, then the newest saved under each restore-keys prefix, as the
action does). A `${{ }}` inside `run:` is refused (an injection).

    run-action.py ACTION_DIR --workspace W --runner-temp T --cache-store S --summary F \
        [--input NAME=VALUE]... [--env NAME=VALUE]... [--run-id N] [--seed STEP_ID=DIR] [--workflow FILE]

--seed STEP_ID=DIR: the cache that restore step asks for holds DIR, as if an earlier run saved it.
--workflow FILE: the inputs are the `with:` of FILE's step that uses OWNER/worker@REF (then --input).
--trace-env NAME: each run: step runs under strace; the step's "readers" are the programs it started
whose environment held NAME (argv[0]'s name and argv[1]; the step's own shell, which the runner
gives the step's env, is not one).
Prints one JSON object: {"outputs": {...}, "steps": [{"id", "name", "outcome", "outputs"[, "readers"]}],
"failed": bool}; each step's stdout and stderr go to this program's stderr.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time

import yaml


class Expression:
    """A GitHub Actions expression over a context dictionary."""

    token = re.compile(r"\s*(?:(\d+(?:\.\d+)?)|('(?:[^']|'')*')|(==|!=|&&|\|\||!|\(|\)|,)|([A-Za-z_][A-Za-z0-9_.-]*))")

    def __init__(self, text, context, status):
        self.tokens = []
        position = 0
        text = text.strip()
        while position < len(text):
            match = self.token.match(text, position)
            if not match or match.end() == position:
                raise ValueError(f"cannot read the expression {text!r} at {position}")
            self.tokens.append(match.groups())
            position = match.end()
        self.at = 0
        self.context = context
        self.status = status

    def value(self):
        result = self.disjunction()
        if self.at != len(self.tokens):
            raise ValueError(f"unexpected {self.tokens[self.at]}")
        return result

    def peek(self):
        return self.tokens[self.at][2] if self.at < len(self.tokens) else None

    def disjunction(self):
        left = self.conjunction()
        while self.peek() == "||":
            self.at += 1
            right = self.conjunction()
            left = left if truthy(left) else right
        return left

    def conjunction(self):
        left = self.comparison()
        while self.peek() == "&&":
            self.at += 1
            right = self.comparison()
            left = right if truthy(left) else left
        return left

    def comparison(self):
        left = self.unary()
        while self.peek() in ("==", "!="):
            operator = self.peek()
            self.at += 1
            right = self.unary()
            equal = str(left).lower() == str(right).lower() if isinstance(left, str) or isinstance(right, str) else left == right
            left = equal if operator == "==" else not equal
        return left

    def unary(self):
        if self.peek() == "!":
            self.at += 1
            return not truthy(self.unary())
        if self.peek() == "(":
            self.at += 1
            inner = self.disjunction()
            self.expect(")")
            return inner
        number, string, _, name = self.tokens[self.at]
        self.at += 1
        if number is not None:
            return float(number)
        if string is not None:
            return string[1:-1].replace("''", "'")
        if name in ("true", "false"):
            return name == "true"
        if name == "null":
            return None
        if self.peek() == "(":
            self.at += 1
            self.expect(")")
            functions = {"always": True, "success": self.status == "success", "failure": self.status == "failure",
                         "cancelled": False}
            if name not in functions:
                raise ValueError(f"unknown function {name}")
            return functions[name]
        found = self.context
        for part in name.split("."):
            found = found.get(part, "") if isinstance(found, dict) else ""
        return found

    def expect(self, symbol):
        if self.peek() != symbol:
            raise ValueError(f"expected {symbol}")
        self.at += 1


def truthy(value):
    return value not in (False, None, "", 0, 0.0)


def render(text, context, status="success"):
    """A string with each ${{ }} replaced by its value."""
    def one(match):
        value = Expression(match.group(1), context, status).value()
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, float) and value.is_integer():
            return str(int(value))
        return "" if value is None else str(value)
    return re.sub(r"\$\{\{(.*?)\}\}", one, str(text))


def condition(text, context, status):
    text = str(text).strip()
    match = re.fullmatch(r"\$\{\{(.*)\}\}", text)
    if match:
        text = match.group(1)
    expression = Expression(text, context, status)
    uses_status = any(token[3] in ("always", "success", "failure", "cancelled") for token in expression.tokens)
    if not uses_status:
        return status == "success" and truthy(expression.value())
    return truthy(expression.value())


def read_outputs(path):
    """name=value lines and name<<DELIMITER blocks, as the runner reads GITHUB_OUTPUT."""
    outputs = {}
    with open(path, encoding="utf-8") as file:
        lines = file.read().split("\n")
    index = 0
    while index < len(lines):
        line = lines[index]
        index += 1
        if not line:
            continue
        if "<<" in line and ("=" not in line or line.index("<<") < line.index("=")):
            name, delimiter = line.split("<<", 1)
            value = []
            while lines[index] != delimiter:
                value.append(lines[index])
                index += 1
            index += 1
            outputs[name] = "\n".join(value)
        else:
            name, value = line.split("=", 1)
            outputs[name] = value
    return outputs


def environment_readers(trace, name):
    """The programs of an strace execve log whose environment held NAME, the first (the step's shell) left out."""
    readers = []
    with open(trace, encoding="utf-8", errors="replace") as file:
        lines = [line for line in file if "execve(" in line and line.rstrip().endswith("= 0")]
    for line in lines[1:]:
        call = line[line.index("execve(") + len("execve("):]
        argv_start = call.index(", [") + 3
        argv_end = call.index("], [", argv_start)
        argv = re.findall(r'"((?:[^"\\]|\\.)*)"', call[argv_start:argv_end])
        if f'"{name}=' in call[argv_end:]:
            readers.append(" ".join([os.path.basename(argv[0]) if argv else "?"] + argv[1:2]))
    return readers


def paths_of(with_path, workspace):
    return [os.path.join(workspace, line.strip()) for line in with_path.splitlines() if line.strip()]


def cache_restore(inputs, store, workspace, seed):
    key = inputs["key"]
    entries = sorted((os.path.getmtime(os.path.join(store, name)), name) for name in os.listdir(store))
    names = [name for _, name in entries]
    found = None
    if key + ".tar" in names:
        found = key
    else:
        for prefix in [line.strip() for line in inputs.get("restore-keys", "").splitlines() if line.strip()]:
            matches = [name[:-4] for name in reversed(names) if name.startswith(prefix)]
            if matches:
                found = matches[0]
                break
    if found is None and seed:
        for path in paths_of(inputs["path"], workspace):
            shutil.rmtree(path, ignore_errors=True)
            shutil.copytree(seed, path, symlinks=True)
        return {"cache-hit": "true", "cache-primary-key": key, "cache-matched-key": key}
    if found is None:
        return {"cache-hit": "false", "cache-primary-key": key}
    with tarfile.open(os.path.join(store, found + ".tar")) as archive:
        archive.extractall("/", filter="fully_trusted")
    return {"cache-hit": "true" if found == key else "false", "cache-primary-key": key, "cache-matched-key": found}


def cache_save(inputs, store, workspace):
    key = inputs["key"]
    target = os.path.join(store, key + ".tar")
    if os.path.exists(target):
        print(f"cache {key} exists: not saved", file=sys.stderr)
        return {}
    with tarfile.open(target + ".part", "w") as archive:
        for path in paths_of(inputs["path"], workspace):
            if os.path.exists(path):
                archive.add(path)
    os.rename(target + ".part", target)
    time.sleep(0.01)  # later saves sort newer
    return {}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("action")
    parser.add_argument("--workspace", required=True)
    parser.add_argument("--runner-temp", required=True)
    parser.add_argument("--cache-store", required=True)
    parser.add_argument("--summary", required=True)
    parser.add_argument("--input", action="append", default=[])
    parser.add_argument("--env", action="append", default=[])
    parser.add_argument("--run-id", default="1")
    parser.add_argument("--seed", action="append", default=[])
    parser.add_argument("--workflow", help="a workflow whose step that uses OWNER/worker@REF gives the inputs")
    parser.add_argument("--trace-env", help="report the programs of each run: step whose environment held this variable")
    arguments = parser.parse_args()

    with open(os.path.join(arguments.action, "action.yml"), encoding="utf-8") as file:
        action = yaml.safe_load(file)
    given = {}
    if arguments.workflow:
        with open(arguments.workflow, encoding="utf-8") as file:
            workflow = yaml.safe_load(file)
        steps = [step for job in workflow["jobs"].values() for step in job["steps"]
                 if re.search(r"/worker@", step.get("uses", ""))]
        if len(steps) != 1:
            sys.exit(f"{arguments.workflow}: {len(steps)} steps use OWNER/worker@REF (one expected)")
        given = {name: str(value) for name, value in steps[0].get("with", {}).items()}
        if any("${{" in value for value in given.values()):
            sys.exit(f"{arguments.workflow}: the step's with: holds an expression this runner cannot know")
    given.update(dict(item.split("=", 1) for item in arguments.input))
    unknown = set(given) - set(action.get("inputs", {}))
    if unknown:
        sys.exit(f"unknown inputs: {sorted(unknown)}")
    inputs = {name: given.get(name, str(spec.get("default", ""))) for name, spec in action.get("inputs", {}).items()}
    seeds = dict(item.split("=", 1) for item in arguments.seed)
    os.makedirs(arguments.cache_store, exist_ok=True)

    environment = dict(os.environ)
    environment.update(dict(item.split("=", 1) for item in arguments.env))
    environment.update({
        "GITHUB_ACTIONS": "true", "CI": "true", "RUNNER_TEMP": arguments.runner_temp,
        "RUNNER_OS": "Linux", "RUNNER_ARCH": "X64", "GITHUB_ACTION_PATH": os.path.abspath(arguments.action),
        "GITHUB_WORKSPACE": arguments.workspace, "GITHUB_STEP_SUMMARY": arguments.summary,
        "GITHUB_RUN_ID": arguments.run_id, "GITHUB_RUN_ATTEMPT": "1",
        "GITHUB_ACTION_REPOSITORY": "example/worker",
    })
    open(arguments.summary, "a").close()  # the runner makes the summary file; steps append to it
    files = tempfile.mkdtemp(dir=arguments.runner_temp, prefix="_runner_file_commands")
    environment["GITHUB_ENV"] = os.path.join(files, "env")
    environment["GITHUB_PATH"] = os.path.join(files, "path")
    context = {
        "inputs": inputs, "steps": {},
        "github": {"action_path": environment["GITHUB_ACTION_PATH"], "run_id": arguments.run_id, "run_attempt": "1",
                   "workspace": arguments.workspace},
        "runner": {"temp": arguments.runner_temp, "os": "Linux", "arch": "X64"},
    }
    status = "success"
    report = []
    added_path = []
    for number, step in enumerate(action["runs"]["steps"]):
        identifier = step.get("id", f"__{number}")
        name = step.get("name", identifier)
        if not condition(step.get("if", "success()"), context, status):
            context["steps"][identifier] = {"outputs": {}, "outcome": "skipped", "conclusion": "skipped"}
            report.append({"id": identifier, "name": name, "outcome": "skipped", "outputs": {}})
            continue
        outputs = {}
        outcome = "success"
        if "run" in step:
            if "${{" in step["run"]:
                sys.exit(f"step {name!r}: an expression inside run: (pass it through env:)")
            step_env = dict(environment)
            for entry in open(environment["GITHUB_ENV"]).read().splitlines() if os.path.exists(environment["GITHUB_ENV"]) else []:
                if "=" in entry:
                    key, value = entry.split("=", 1)
                    step_env[key] = value
            step_env.update({key: render(value, context, status) for key, value in step.get("env", {}).items()})
            step_env["PATH"] = ":".join(list(reversed(added_path)) + [environment["PATH"]]) if added_path else environment["PATH"]
            output_file = os.path.join(files, f"output_{number}")
            open(output_file, "w").close()
            step_env["GITHUB_OUTPUT"] = output_file
            script = os.path.join(files, f"step_{number}.sh")
            with open(script, "w", encoding="utf-8") as file:
                file.write(step["run"])
            shell = step.get("shell")
            if shell != "bash":
                sys.exit(f"step {name!r}: shell {shell!r} (composite steps name their shell; this runner plays bash)")
            print(f"::group::{name}", file=sys.stderr)
            command = ["bash", "--noprofile", "--norc", "-eo", "pipefail", script]
            trace = os.path.join(files, f"trace_{number}")
            if arguments.trace_env:
                command = ["strace", "-f", "-qq", "--seccomp-bpf", "-e", "trace=execve", "-v", "-s", "65536", "-o", trace] + command
            result = subprocess.run(command, cwd=arguments.workspace, env=step_env, stdout=sys.stderr, stderr=sys.stderr)
            print("::endgroup::", file=sys.stderr)
            outputs = read_outputs(output_file)
            if os.path.exists(environment["GITHUB_PATH"]):
                added_path = [line for line in open(environment["GITHUB_PATH"]).read().splitlines() if line]
            outcome = "success" if result.returncode == 0 else "failure"
            if result.returncode:
                print(f"step {name!r} exited {result.returncode}", file=sys.stderr)
        elif "uses" in step:
            uses = step["uses"]
            if not re.fullmatch(r"[\w.-]+/[\w./-]+@[0-9a-f]{40}", uses):
                sys.exit(f"step {name!r}: {uses} is not pinned by a commit SHA")
            with_values = {key: render(value, context, status) for key, value in step.get("with", {}).items()}
            action_name = uses.split("@")[0]
            if action_name == "actions/cache/restore":
                outputs = cache_restore(with_values, arguments.cache_store, arguments.workspace,
                                        seeds.get(identifier))
            elif action_name == "actions/cache/save":
                outputs = cache_save(with_values, arguments.cache_store, arguments.workspace)
            else:
                sys.exit(f"step {name!r}: this runner does not play {uses}")
            print(f"{name}: {action_name} {json.dumps(with_values)} -> {json.dumps(outputs)}", file=sys.stderr)
        if outcome == "failure":
            status = "failure"
        context["steps"][identifier] = {"outputs": outputs, "outcome": outcome, "conclusion": outcome}
        report.append({"id": identifier, "name": name, "outcome": outcome, "outputs": outputs})
        if arguments.trace_env and "run" in step:
            report[-1]["readers"] = environment_readers(trace, arguments.trace_env)
    action_outputs = {name: render(spec["value"], context, status) for name, spec in action.get("outputs", {}).items()}
    print(json.dumps({"outputs": action_outputs, "steps": report, "failed": status == "failure",
                      "path": added_path}))


if __name__ == "__main__":
    main()
