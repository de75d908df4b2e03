"""The export targets table (`tinyrps targets`): each target, its family, the device that runs it, and
what is missing on this machine to make it."""
from __future__ import annotations

from .tables import print_table


def targets_table(targets: dict) -> None:
    from ...hardware.families import get_family
    rows, missing = [], {}
    for name, target in targets.items():
        family = get_family(target.family)
        if family.name not in missing:
            missing[family.name] = family.available()
        note = f" [{missing[family.name]}]" if missing[family.name] else ""
        rows.append([name, target.family, family.default_device, target.description + note])
    print_table("export targets", ["target", "family", "runs on", "what"], rows, text_columns=4, unwrapped=3,
                legend={"target": "the name `export --target` takes", "family": "the kind of program",
                        "runs on": "the device that runs it unless --device names another",
                        "what": "what the program is, and what is missing on this machine to make it"})

