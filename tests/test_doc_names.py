"""Every source file and every tinyrps module, function or constant the README and docs/ cite in code
spans exists: a doc that names a moved file or a renamed function fails here, not in a reader's hands.

Cited forms: a path with a source suffix (`firmware/src/runtime.c`, `src/ops/operators.def`,
`measure/cycles.py`; found from the repository root, firmware/, src/tinyrps/ or firmware/src/, or
by its name anywhere in the tree), a dotted name below tinyrps (`tinyrps.firmware.qemu.program_inputs`),
and a module's name with one attribute (`artifacts.staged_folder`) where the first part is a module
of the package. Files of ExecuTorch's own tree, run folders (RUN/, OUT/) and placeholders (<kind>) are
outside the check. Read statically: nothing is imported.
"""
import ast
import re
from functools import lru_cache
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "src" / "tinyrps"
DOCUMENTS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
SPAN = re.compile(r"`([^`\s]+)`")
SOURCE_SUFFIXES = (".py", ".c", ".h", ".def", ".cmake", ".ld", ".js", ".html", ".css", ".sh")
ROOTS = (REPO, REPO / "firmware", PACKAGE, REPO / "firmware" / "src", REPO / "firmware" / "src" / "kernels",
         REPO / "firmware" / "board")
# paths in ExecuTorch's, Arm's or the user's trees, or in a library `deploy library` writes, named as such
FOREIGN = ("executorch/", "backends/", "examples/", "example/", "src/runtime/", "~", "/")
# ExecuTorch's Arm example scripts (its source tree's, not in its wheel), which docs/fvp.md drives
EXECUTORCH_SCRIPTS = ("setup.sh", "setup_path.sh", "run_fvp.sh", "build_executor_runner.sh")
# the last part of a file name, not an attribute: `data.json` is a file
DATA_SUFFIXES = ("json", "png", "pt", "pte", "md", "npz", "txt", "tosa", "ini", "log", "db", "csv", "svg", "elf")


@lru_cache(maxsize=None)
def tree_names() -> frozenset:
    return frozenset(p.name for p in REPO.rglob("*") if ".venv" not in p.parts and ".git" not in p.parts)


def cited(document: Path) -> list:
    text = document.read_text()
    return [(document.name, token.rstrip(".,:;()").removesuffix("()")) for token in SPAN.findall(text)]


def source_path_exists(token: str) -> bool:
    if any(Path(root, token).exists() for root in ROOTS):
        return True
    return "/" not in token and token in tree_names()


@lru_cache(maxsize=None)
def module_file(dotted: str):
    """src/tinyrps/<dotted as path>.py or its package's __init__.py, or None."""
    base = PACKAGE.joinpath(*dotted.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


@lru_cache(maxsize=None)
def defined_names(path: Path) -> frozenset:
    """Top-level functions, classes and assignments of a module, and the attributes and methods of its classes."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(t.id for t in targets if isinstance(t, ast.Name))
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
    return frozenset(names)


@lru_cache(maxsize=None)
def module_stems() -> dict:
    """A module's last name -> every dotted module of the package with it ("cycles" -> ["measure.cycles"])."""
    stems = {}
    for path in PACKAGE.rglob("*.py"):
        dotted = ".".join(path.relative_to(PACKAGE).with_suffix("").parts)
        if dotted.endswith("__init__"):
            dotted = dotted.rsplit(".", 1)[0] if "." in dotted else ""
        if dotted:
            stems.setdefault(dotted.rsplit(".", 1)[-1], []).append(dotted)
    return stems


@lru_cache(maxsize=None)
def package_names() -> frozenset:
    return frozenset().union(*(defined_names(p) for p in PACKAGE.rglob("*.py")))


def dotted_exists(parts: list) -> bool:
    """tinyrps.a.b.c: the longest module prefix, then each remaining name defined in it (one level: a class's
    attribute is found among the module's names, as ast.walk reads them)."""
    for cut in range(len(parts), 0, -1):
        path = module_file(".".join(parts[:cut]))
        if path is not None:
            return all(name in defined_names(path) for name in parts[cut:])
    return False


def test_every_cited_source_file_exists():
    missing = []
    for document in DOCUMENTS:
        for where, token in cited(document):
            if not token.endswith(SOURCE_SUFFIXES) or token.startswith(FOREIGN) or re.search(r"[<*{]", token):
                continue
            if re.search(r"(^|/)[A-Z]+[./_]", token) or token in EXECUTORCH_SCRIPTS:   # RUN/, NAME.h: placeholders
                continue
            if not source_path_exists(token):
                missing.append(f"{where}: `{token}`")
    assert not missing, "cited files that do not exist:\n" + "\n".join(missing)


def test_every_cited_tinyrps_name_exists():
    missing = []
    for document in DOCUMENTS:
        for where, token in cited(document):
            if not re.fullmatch(r"[A-Za-z_][\w]*(\.[A-Za-z_]\w*)+", token) or token.endswith(SOURCE_SUFFIXES):
                continue
            parts = token.split(".")
            if parts[-1] in DATA_SUFFIXES:
                continue
            if parts[0] == "tinyrps":
                ok = dotted_exists(parts[1:]) if len(parts) > 1 else True
            elif len(parts) == 2 and parts[0] in module_stems() and parts[1] in package_names():
                # `module.name` of a name the package defines somewhere: it must be that module's (a JSON key
                # such as `vela.clock_hz` names no code and is left alone)
                ok = any(parts[1] in defined_names(module_file(m)) for m in module_stems()[parts[0]])
            else:
                continue
            if not ok:
                missing.append(f"{where}: `{token}`")
    assert not missing, "cited names that do not exist:\n" + "\n".join(missing)
