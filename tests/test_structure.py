"""Modules a newcomer can read: no Python module of the package over 500 lines and no function over
60, so that each module is one concern and each function one step. Templates (files the package
writes out, under deploy/templates/) are text, not code, and are outside the rule. Read statically:
nothing is imported."""
import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "tinyrps"
TEMPLATES = PACKAGE / "deploy" / "templates"
MODULE_LINES = 500
FUNCTION_LINES = 60


def modules() -> list:
    return sorted(p for p in PACKAGE.rglob("*.py") if TEMPLATES not in p.parents)


def long_modules() -> list:
    """(lines, module) of each module over MODULE_LINES."""
    found = []
    for path in modules():
        lines = len(path.read_text().splitlines())
        if lines > MODULE_LINES:
            found.append((lines, str(path.relative_to(PACKAGE))))
    return found


def long_functions() -> list:
    """(lines, module:qualified name) of each function or method over FUNCTION_LINES, decorators
    aside; a nested function counts in its own right and inside the function that holds it."""
    found = []
    for path in modules():
        def visit(node, prefix):
            for child in ast.iter_child_nodes(node):
                name = prefix
                if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    name = f"{prefix}{child.name}."
                if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    lines = child.end_lineno - child.lineno + 1
                    if lines > FUNCTION_LINES:
                        found.append((lines, f"{path.relative_to(PACKAGE)}:{name[:-1]}"))
                visit(child, name)
        visit(ast.parse(path.read_text()), "")
    return found


def listing(found: list) -> str:
    return "\n".join(f"{lines:5d} lines  {name}" for lines, name in sorted(found, reverse=True))


def test_no_module_is_over_500_lines():
    found = long_modules()
    assert not found, ("split these by concern (each module one purpose, its docstring saying which):\n"
                       + listing(found))


def test_no_function_is_over_60_lines():
    found = long_functions()
    assert not found, "split these into steps, each a function named for what it does:\n" + listing(found)


if __name__ == "__main__":
    print(listing(long_modules() + long_functions()))
