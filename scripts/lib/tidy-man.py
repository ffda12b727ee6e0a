"""Tidies the mdoc page swift-argument-parser generates (scripts/make-man.sh) so that it renders
without warnings (`mandoc -T lint -W warning`), and gives it the EXIT STATUS section it lacks: the
exit codes and their meanings, in the words of docs/EXIT-CODES.md's table.
    python3 scripts/lib/tidy-man.py docs/worker.1 docs/EXIT-CODES.md"""
import re
import sys

page_path, codes_path = sys.argv[1], sys.argv[2]
lines = open(page_path, encoding="utf-8").read().split("\n")


def plain(text):
    """Markdown table text as roff text: backticks dropped, escaping `\\`, a leading dot guarded."""
    text = text.replace("`", "").replace("\\|", "|").replace("\\", "\\e").replace("\u2014", "\\(em")
    return "\\&" + text if text.startswith((".", "'")) else text


codes = []
for row in open(codes_path, encoding="utf-8").read().split("\n"):
    match = re.match(r"^\| (\d) \| (.*) \|$", row)
    if match:
        codes.append((match.group(1), plain(match.group(2))))
    elif codes:
        break
if [code for code, _ in codes] != ["0", "1", "2", "3", "4"]:
    sys.exit(f"{codes_path}: expected the exit codes 0-4 in its first table")

out = []
literal = False
for line in lines:
    if line == ".Ex -std":
        out += ["The exit status says what a scheduler or a script needs to know:", ".Bl -tag -width Ds"]
        for code, meaning in codes:
            out += [f".It {code}", meaning]
        out += [".El", ".Pp", "A signal that stops a run ends the process by that signal (130 for SIGINT, 143 for SIGTERM)."]
        continue
    indented = line.startswith("  ") and not line.startswith(".")
    if indented and not literal:
        out += [".Bd -literal -offset indent"]
        literal = True
    elif not indented and literal:
        out += [".Ed"]
        literal = False
    if literal:
        out.append(line[2:])
    elif line == "":
        out.append(".Pp")
    elif not line.startswith("."):
        # One sentence a line: mandoc spaces sentences itself.
        out += re.split(r"(?<=[A-Za-z0-9)\]\"'][.?!]) (?=[A-Z(`'\"])", line)
    else:
        out.append(line)
if literal:
    out.append(".Ed")
# A paragraph break right before or after a list or display is redundant (mandoc warns).
tidy = []
for line in out:
    if line == ".Pp" and tidy and tidy[-1] in (".Pp", ".Bl -tag -width 6n", ".Ed") :
        continue
    if line.startswith((".It", ".El", ".Sh", ".Ss", ".Bd")) and tidy and tidy[-1] == ".Pp":
        tidy.pop()
    tidy.append(line)
open(page_path, "w", encoding="utf-8").write("\n".join(tidy))
