"""Tables on screen that never cut a figure, and the same tables in Markdown.

Every table and line a command prints as its result goes through `out_console` (stdout: tables are
results), by print_table and print_line, so that one console decides the width of all of them.
"""
from __future__ import annotations

from typing import Optional

from rich import box
from rich.cells import cell_len
from rich.console import Console
from rich.table import Table

out_console = Console(highlight=False)  # stdout: tables are results


def print_line(text: str) -> None:
    """A line of a result on stdout, beside its tables (rich markup, as print_table's cells)."""
    out_console.print(text)


def percent(x) -> str:
    return "" if x is None else f"{100 * x:.2f} %"


def sentence(text: str) -> str:
    return text[:1].upper() + text[1:]


def print_table(title: str, header: list, rows: list, text_columns: int = 2, unwrapped: int = None,
                legend: dict = None) -> None:
    """A table on stdout that never cuts a cell: the first `text_columns` columns left-aligned (the
    first `unwrapped` of them, by default all, never wrapped), the rest figures, right-aligned and
    never wrapped. Too wide for the console (80 columns, and 80 when stdout is no terminal), it
    is split into tables of fewer columns, each led by the first; where even that does not fit,
    each row is printed as lines of `column  value`. Then `legend`: what each column means."""
    unwrapped = text_columns if unwrapped is None else unwrapped
    layout = TableLayout(header, rows, text_columns, unwrapped)
    groups = layout.column_groups(out_console)
    if groups is None:
        layout.print_records(out_console, title)
    else:
        for n, (columns, widths) in enumerate(groups):
            out_console.print(layout.table(columns, title if n == 0 else None, widths))
    if legend:
        out_console.print(legend_line(header, legend))


def legend_line(header: list, legend: dict) -> str:
    """`column: meaning; ...` in the header's order (a header's lines joined by spaces)."""
    names = {" ".join(col.split()): col for col in header}
    unknown = set(legend) - set(names)
    assert not unknown, f"the legend names no column: {unknown}"
    return "; ".join(f"{name}: {legend[name]}" for name in names if name in legend)


class TableLayout:
    """The columns of a table, and the layouts that fit them into a console's width: rich would
    shrink a column that does not fit, cutting its figures ("median…"), so the widths are
    chosen here, and a table that cannot have them is laid out otherwise."""

    def __init__(self, header: list, rows: list, text_columns: int, unwrapped: int):
        self.header, self.rows = header, rows
        self.text_columns, self.unwrapped = text_columns, unwrapped
        cells = [[header[i]] + [row[i] for row in rows] for i in range(len(header))]
        lines = [[line for cell in column for line in str(cell).splitlines()] for column in cells]
        # a column's natural width (its longest line) and the least it can have (its longest word, if it wraps)
        self.natural = [max(map(cell_len, column), default=0) for column in lines]
        self.least = [max((cell_len(word) for line in column for word in line.split()), default=0)
                      if self.wraps(i) else self.natural[i] for i, column in enumerate(lines)]

    def wraps(self, i: int) -> bool:
        return self.unwrapped <= i < self.text_columns

    def table(self, columns: list, title: Optional[str], widths: dict = None) -> Table:
        # collapsed padding: two spaces between columns
        t = Table(title=title, box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True)
        for i in columns:
            t.add_column(self.header[i], justify="left" if i < self.text_columns else "right",
                         no_wrap=not self.wraps(i), width=(widths or {}).get(i))
        for row in self.rows:
            t.add_row(*(row[i] for i in columns))
        return t

    def widths(self, columns: list, width: int) -> Optional[dict]:
        """The wrapped columns' widths that fit `columns` into `width` (each at least its longest
        word, the rest shared out up to its natural width), or None where they cannot fit."""
        room = width - self.overhead(len(columns)) - sum(self.least[i] for i in columns)
        if room < 0:
            return None
        widths = {}
        for i in columns:
            if self.wraps(i):
                extra = min(room, self.natural[i] - self.least[i])
                widths[i], room = self.least[i] + extra, room - extra
        return widths

    @staticmethod
    def overhead(n: int) -> int:
        """The characters a table of n columns spends beside its cells: an edge each side, two between columns."""
        return 2 + 2 * (n - 1)

    def column_groups(self, console: Console) -> Optional[list]:
        """[(columns, wrapped widths)]: the columns in groups, each led by the first column, that fit
        side by side; None where the first column and one other do not."""
        groups, current = [], [0]
        for i in range(1, len(self.header)):
            if self.widths(current + [i], console.width) is not None:
                current.append(i)
                continue
            if len(current) == 1 or self.widths([0, i], console.width) is None:
                return None
            groups.append(current)
            current = [0, i]
        return [(columns, self.widths(columns, console.width)) for columns in groups + [current]]

    def print_records(self, console: Console, title: str) -> None:
        """Each row as lines: its first cell, then `column  value` per other column (a cell's
        lines indented below each other); long lines run on rather than being cut."""
        names = [" ".join(col.split()) for col in self.header]
        indent = 2 + max(len(n) for n in names[1:]) + 2 if len(names) > 1 else 2
        lines = [title]
        for row in self.rows:
            lines += ["", " ".join(str(row[0]).split())]
            for name, cell in zip(names[1:], row[1:]):
                parts = str(cell).splitlines() or [""]
                lines.append(f"  {name:<{indent - 4}}  {parts[0]}".rstrip())
                lines += [" " * indent + part for part in parts[1:]]
        console.print("\n".join(lines), soft_wrap=True, markup=False)


def markdown_cell(value) -> str:
    """A table cell's text: a '|' inside it would end the cell, a newline the row."""
    return str(value).replace("|", "\\|").replace("\n", " ")


def markdown_table(header: list, rows: list) -> str:
    lines = ["| " + " | ".join(map(markdown_cell, header)) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(map(markdown_cell, row)) + " |" for row in rows]
    return "\n".join(lines)

