"""The coverage set of scripts/operator_coverage.py: at least 200 programs, each a module that runs on its shapes."""
import torch

from tinyrps.devtools.coverage_programs import PROGRAMS


def test_the_coverage_set_has_at_least_200_programs_that_run_in_torch():
    assert len(PROGRAMS) >= 200
    for name, (factory, shapes) in PROGRAMS.items():
        module = factory().eval()
        with torch.no_grad():
            out = module(*(torch.zeros(s) for s in shapes))
        assert isinstance(out, torch.Tensor) and out.numel() > 0, name


def test_every_program_is_a_factory_of_the_file_export_loads():
    import tinyrps.devtools.coverage_programs as programs
    assert all(getattr(programs, name) is factory for name, (factory, _) in PROGRAMS.items())
