"""The family records: every fact a stage needs about a hardware family, in one table."""
from __future__ import annotations

import dataclasses
import importlib

import pytest

from tinyrps.infra.errors import UserError
from tinyrps.hardware.families import FAMILIES, family_names, get_family, get_target, targets


def test_target_names_are_unique_and_each_belongs_to_its_family():
    names = [t.name for f in FAMILIES for t in f.targets]
    assert len(names) == len(set(names))
    for family in FAMILIES:
        assert family.targets and all(t.family == family.name for t in family.targets)


@pytest.mark.parametrize("family", FAMILIES, ids=lambda f: f.name)
def test_each_family_names_modules_that_have_what_it_promises(family):
    assert callable(importlib.import_module(f"tinyrps.export.{family.recipes}").build)
    if family.reference:
        assert callable(importlib.import_module(f"tinyrps.reference.{family.reference}").evaluate)
    assert dataclasses.is_dataclass(family.info)
    assert family.available() is None      # everything is installed here


def test_families_are_found_by_name_and_targets_in_table_order():
    assert family_names() == ("cpu", "ethos-u", "cortex-m")
    order = list(targets())
    assert order[:3] == ["fp32", "fp32-xnnpack", "int8-xnnpack"] and order[-1] == "cortex-m85"
    assert get_target("cortex-m55").family == "cortex-m"
    with pytest.raises(UserError, match="unknown target 'npu9'"):
        get_target("npu9")
    with pytest.raises(UserError, match="unknown hardware family"):
        get_family("gpu")


def test_the_ethos_u_accelerators_are_vela_s():
    from ethosu.vela.architecture_features import Accelerator

    from tinyrps.hardware.families import ACCELERATORS
    assert set(ACCELERATORS) == {a.value for a in Accelerator}


def test_availability_checks_import_nothing_heavy():
    import subprocess
    import sys
    code = ("import sys; from tinyrps.hardware.families import FAMILIES; [f.available() for f in FAMILIES]; "
            "print([m for m in ('torch', 'executorch.exir', 'ethosu.vela', 'executorch.backends') if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
