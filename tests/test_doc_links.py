"""Every relative link of the README and docs/ points at a file that exists, and at a heading of it
where it names one (GitHub's anchors: the heading in lower case, punctuation dropped, spaces as '-')."""
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DOCUMENTS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def anchors(path: Path) -> set:
    text = re.sub(r"```.*?```", "", path.read_text(), flags=re.S)      # no headings inside code blocks
    headings = re.findall(r"^#+ +(.+?) *$", text, flags=re.M)
    return {re.sub(r"[^\w\- ]", "", h.lower()).replace(" ", "-") for h in headings}


def test_github_anchor_rule():
    assert re.sub(r"[^\w\- ]", "", "Playing in a browser: `tinyrps serve`".lower()).replace(" ", "-") \
        == "playing-in-a-browser-tinyrps-serve"


def test_every_relative_link_reaches_its_file_and_heading():
    broken = []
    for document in DOCUMENTS:
        text = re.sub(r"```.*?```", "", document.read_text(), flags=re.S)
        for target in LINK.findall(text):
            if re.match(r"[a-z]+:", target):          # http:, https:, mailto:
                continue
            name, _, anchor = target.partition("#")
            path = (document.parent / name).resolve() if name else document
            if not path.exists():
                broken.append(f"{document.name}: {target} (no such file)")
            elif anchor and path.suffix == ".md" and anchor not in anchors(path):
                broken.append(f"{document.name}: {target} (no such heading)")
    assert not broken, "\n".join(broken)
