#!/usr/bin/env python3
"""Source files that use each other (issue 63's "file pairs"): A names a type B declares and B
names a type A declares. Types are classes, structs, enums, protocols, actors and typealiases
declared at any depth (an extension declares nothing; a name declared in two files is skipped);
comments and string literals are left out. Prints each pair and the count.

  python3 Benchmarks/file-pairs.py Sources"""
import os, re, sys, itertools
root = sys.argv[1]
decl = re.compile(r'\b(?:class|struct|enum|protocol|actor|typealias)\s+([A-Z][A-Za-z0-9_]*)')
files = {}
for base, _, names in os.walk(root):
    for name in names:
        if name.endswith('.swift'):
            path = os.path.join(base, name)
            text = open(path).read()
            # strip comments and strings roughly
            text = re.sub(r'//[^\n]*', '', text)
            text = re.sub(r'"""[\s\S]*?"""', '""', text)
            text = re.sub(r'"(?:\\.|[^"\\\n])*"', '""', text)
            files[os.path.relpath(path, root)] = text
declared = {}
for path, text in files.items():
    for name in decl.findall(text):
        declared.setdefault(name, set()).add(path)
# a name declared in several files (nested types of the same name) is ambiguous: skip
owner = {name: next(iter(paths)) for name, paths in declared.items() if len(paths) == 1}
uses = {}
for path, text in files.items():
    words = set(re.findall(r'\b[A-Z][A-Za-z0-9_]*\b', text))
    uses[path] = {owner[w] for w in words if w in owner and owner[w] != path}
pairs = sorted({tuple(sorted((a, b))) for a in uses for b in uses[a] if a in uses.get(b, set())})
for a, b in pairs:
    print(f"{a} <-> {b}")
print(len(pairs), "pairs")
