#!/usr/bin/env python3
"""Runs the GitLab CI/CD component (templates/worker-sync.yml) as GitLab would, for the tests and
scripts/check-deploy.sh.

The inputs are interpolated into the component (`$[[ inputs.NAME ]]`, defaults from `spec:`), the
key job runs (its variables set as written, raw ones unexpanded; its script items in one `sh -e`
session, as the runner does), its child pipeline (the artifact worker-child.yml) is read, and that
pipeline's job runs with its cache played against a folder of tar files: restored by its key before
the script, saved after it (also on failure with `when: always`).

    run-gitlab-component.py COMPONENT --workspace W --cache-store S [--input NAME=VALUE]...
        [--child-only]

--child-only: stop after the key job (the child pipeline is left in W/worker-child.yml).
Prints one JSON object: {"key_job": code, "child_job": code or null, "cache_key", "restored"}.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tarfile

import yaml


def interpolate(text, inputs):
    def one(match):
        name = match.group(1)
        if name not in inputs:
            sys.exit(f"unknown input {name}")
        return inputs[name]
    return re.sub(r"\$\[\[\s*inputs\.([\w-]+)\s*\]\]", one, text)


def variables_of(job):
    values = {}
    for name, value in (job.get("variables") or {}).items():
        if isinstance(value, dict):
            if value.get("expand", True):
                sys.exit(f"variable {name}: this runner plays raw variables only")
            value = value.get("value", "")
        elif "$" in str(value):
            sys.exit(f"variable {name}: {value!r} would be expanded by GitLab (write it raw)")
        values[name] = str(value)
    return values


def run_job(job, name, workspace):
    environment = dict(os.environ)
    environment.update({"CI": "true", "GITLAB_CI": "true", "CI_JOB_NAME": name, "CI_PROJECT_DIR": workspace})
    environment.update(variables_of(job))
    script = "\n".join(job["script"])
    print(f"--- job {name}", file=sys.stderr)
    result = subprocess.run(["sh", "-e", "-c", script], cwd=workspace, env=environment, stdout=sys.stderr, stderr=sys.stderr)
    print(f"--- job {name} exited {result.returncode}", file=sys.stderr)
    return result.returncode


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("component")
    parser.add_argument("--workspace", required=True)
    parser.add_argument("--cache-store", required=True)
    parser.add_argument("--input", action="append", default=[])
    parser.add_argument("--child-only", action="store_true")
    arguments = parser.parse_args()

    with open(arguments.component, encoding="utf-8") as file:
        header, body = file.read().split("\n---\n", 1)
    spec = yaml.safe_load(header)["spec"]["inputs"]
    given = dict(item.split("=", 1) for item in arguments.input)
    unknown = set(given) - set(spec)
    if unknown:
        sys.exit(f"unknown inputs: {sorted(unknown)}")
    inputs = {name: given.get(name, str(value.get("default", ""))) for name, value in spec.items()}
    pipeline = yaml.safe_load(interpolate(body, inputs))
    prefix = inputs["job-prefix"]
    key_job = pipeline[f"{prefix}-key"]
    trigger = pipeline[f"{prefix}-sync"]["trigger"]
    if trigger["include"][0] != {"artifact": "worker-child.yml", "job": f"{prefix}-key"}:
        sys.exit(f"the trigger job runs {trigger['include']}")

    result = {"key_job": run_job(key_job, f"{prefix}-key", arguments.workspace), "child_job": None}
    child_path = os.path.join(arguments.workspace, "worker-child.yml")
    if result["key_job"] or arguments.child_only:
        print(json.dumps(result))
        return
    with open(child_path, encoding="utf-8") as file:
        child = yaml.safe_load(file)
    job = child["worker-sync"]
    cache = job["cache"]
    result["cache_key"] = str(cache["key"])
    os.makedirs(arguments.cache_store, exist_ok=True)
    archive_path = os.path.join(arguments.cache_store, result["cache_key"] + ".tar")
    result["restored"] = os.path.exists(archive_path)
    if result["restored"]:
        with tarfile.open(archive_path) as archive:
            archive.extractall(arguments.workspace, filter="fully_trusted")
    result["child_job"] = run_job(job, "worker-sync", arguments.workspace)
    if result["child_job"] == 0 or cache.get("when") == "always":
        with tarfile.open(archive_path + ".part", "w") as archive:
            for path in cache["paths"]:
                full = os.path.join(arguments.workspace, path)
                if os.path.exists(full):
                    archive.add(full, arcname=path.rstrip("/"))
        os.replace(archive_path + ".part", archive_path)
    result["artifacts"] = sorted(name for name in job["artifacts"]["paths"] + [job["artifacts"]["reports"]["junit"]]
                                 if os.path.exists(os.path.join(arguments.workspace, name)))
    print(json.dumps(result))


if __name__ == "__main__":
    main()
