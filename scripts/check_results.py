#!/usr/bin/env python3
"""Checks the committed results/ folders: no machine paths, and every link of a Markdown file
resolves to a file git tracks (or will track: not ignored) in the repository.

    scripts/check_results.py            # report problems, exit 1 if any
    scripts/check_results.py --fix      # rewrite stale outputs: machine paths made relative to
                                        # the repository, links to files that are not committed
                                        # turned into plain text naming the command that draws them

Only the standard library; run from anywhere.
"""
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS = os.path.join(ROOT, "results")
TEXT = (".md", ".txt", ".json", ".csv", ".yaml", ".jsonl", ".tex", ".log")
# A link or image target: [text](target) or ![alt](target).
LINK = re.compile(r"(!?)\[([^\]]*)\]\(([^)\s]+)\)")
# Absolute paths of a machine: home, work, temporary and root folders.
MACHINE = re.compile(r"(?<![\w.])/(?:work|home|root|tmp|Users|mnt|scratch)/[^\s\"'`)|,;]*")


def git(*args):
    return subprocess.run(["git", "-C", ROOT, *args], capture_output=True, text=True, check=True).stdout


def committed_or_committable(paths):
    """The subset of repository-relative `paths` that exist and are not ignored by git."""
    existing = [p for p in paths if os.path.isfile(os.path.join(ROOT, p))]
    if not existing:
        return set()
    # Without --no-index git reports only untracked files that are ignored: a tracked file counts.
    ignored = subprocess.run(["git", "-C", ROOT, "check-ignore", "--stdin"],
                             input="\n".join(existing), capture_output=True, text=True).stdout
    return set(existing) - set(ignored.split("\n"))


def relative(match):
    path = match.group(0)
    if path.startswith(ROOT + "/"):
        return path[len(ROOT) + 1:]
    if path == ROOT:
        return "."
    return path


def link_targets(text, rel):
    """{link target: repository-relative path} of the local links of Markdown file `rel`."""
    targets = {}
    for _bang, _label, target in LINK.findall(text):
        if re.match(r"^[a-z]+:", target) or target.startswith("#"):
            continue  # a URL or an anchor
        local = target.split("#")[0]
        targets[target] = os.path.normpath(os.path.join(os.path.dirname(rel), local))
    return targets


def main():
    fix = "--fix" in sys.argv[1:]
    problems = []
    files = []
    for dirpath, _, names in os.walk(RESULTS):
        for n in names:
            if n.endswith(TEXT):
                files.append(os.path.join(dirpath, n))
    # One git call for every file (one per file took most of a minute on a 2-core machine).
    keep = committed_or_committable([os.path.relpath(f, ROOT) for f in files])
    files = [f for f in files if os.path.relpath(f, ROOT) in keep]
    # Every link target of every Markdown file, checked with one git call too.
    texts = {}
    wanted = set()
    for path in files:
        with open(path, encoding="utf-8", errors="replace") as f:
            texts[path] = f.read()
        if path.endswith(".md"):
            wanted.update(link_targets(texts[path], os.path.relpath(path, ROOT)).values())
    resolved = committed_or_committable(sorted(wanted))
    for path in sorted(files):
        rel = os.path.relpath(path, ROOT)
        text = texts[path]
        new = text
        machine = sorted(set(MACHINE.findall(text)))
        if machine:
            if fix:
                new = MACHINE.sub(relative, new)
                left = sorted(set(MACHINE.findall(new)))
            else:
                left = machine
            for m in left:
                problems.append(f"{rel}: machine path {m}")
        if path.endswith(".md"):
            targets = link_targets(new, rel)
            ok = resolved if new == text else committed_or_committable(sorted(set(targets.values())))
            # A folder link resolves when the folder holds a committed file.
            for target, p in targets.items():
                if p in ok or (os.path.isdir(os.path.join(ROOT, p)) and git("ls-files", p).strip()):
                    continue
                if fix:
                    def unlink(m, target=target):
                        if m.group(3) != target:
                            return m.group(0)
                        what = m.group(2) or os.path.basename(target)
                        return f"{what} (`{target}`: not committed; running the experiment draws it)"
                    new = LINK.sub(unlink, new)
                else:
                    problems.append(f"{rel}: link to {target}, which is not a committed file")
        if fix and new != text:
            with open(path, "w", encoding="utf-8") as f:
                f.write(new)
    for p in problems:
        print(p)
    if problems:
        print(f"{len(problems)} problems under results/", file=sys.stderr)
        return 1
    print(f"results/: {len(files)} committed text files, no machine path, every link resolves")
    return 0


if __name__ == "__main__":
    sys.exit(main())
