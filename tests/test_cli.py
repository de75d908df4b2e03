"""Each user error: one line on stderr that says what is wrong, exit code 2, no traceback."""
import json

import pytest


def assert_user_error(res, *needles):
    assert res.returncode == 2, (res.stdout, res.stderr)
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1, res.stderr
    assert "Traceback" not in res.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]


def test_missing_model_file(cli, tmp_path):
    assert_user_error(cli("classify", "--model", tmp_path / "nope.pte", tmp_path / "x.png"), "not found", "tinyrps export")


def test_missing_data_folder(cli, tmp_path):
    assert_user_error(cli("train", "--data", tmp_path / "nowhere", "--out", tmp_path / "run"), "tinyrps data --out")


def test_missing_run_folder(cli, tmp_path):
    assert_user_error(cli("export", "--run", tmp_path / "norun", "--target", "fp32"), "tinyrps train")
    assert_user_error(cli("eval", "--run", tmp_path / "norun"), "tinyrps train")
    assert_user_error(cli("bench", "--run", tmp_path / "norun"), "tinyrps train")


def test_file_that_is_not_a_pte(cli, tmp_path):
    fake = tmp_path / "model.pte"
    fake.write_text("hello, I am not a program")
    assert_user_error(cli("play", "--model", fake, "--moves", "rock"), "not an ExecuTorch program")


def test_corrupted_pte(cli, exported, tmp_path):
    data = bytearray(exported("int8-xnnpack").read_bytes())
    broken = tmp_path / "broken.pte"
    broken.write_bytes(bytes(data[:4096]))     # truncated
    assert_user_error(cli("play", "--model", broken, "--moves", "rock"), "corrupted")


def test_non_image(cli, exported, tmp_path):
    text = tmp_path / "move.png"
    text.write_text("rock")
    assert_user_error(cli("classify", "--model", exported("int8-xnnpack"), text), "not an image")


def test_unknown_target(cli, trained_run):
    assert_user_error(cli("export", "--run", trained_run, "--target", "gpu"), "unknown target 'gpu'", "int8-xnnpack")


def test_unknown_device(cli, exported):
    assert_user_error(cli("play", "--model", exported("fp32"), "--device", "tpu"), "tpu", "executorch")


def test_the_old_name_of_the_executorch_device_still_works_and_help_hides_it():
    from tinyrps.interfaces.cli import build_parser
    parser = build_parser()
    assert parser.parse_args(["play", "--model", "m.pte", "--device", "host"]).device == "executorch"
    sub = next(a for a in parser._actions if a.dest == "command").choices["play"]
    assert "executorch" in sub.format_help() and "host," not in sub.format_help()


def test_bad_moves(cli, exported):
    assert_user_error(cli("play", "--model", exported("fp32"), "--moves", "rock,spock"), "rock/paper/scissors")


def test_eager_device_with_a_pte(cli, exported):
    assert_user_error(cli("play", "--model", exported("fp32"), "--device", "eager", "--moves", "r"), "model.pt")


# ── options: a version, defaults in the help, numbers checked before any work ──
def test_version(cli):
    from importlib.metadata import version
    res = cli("--version")
    assert res.returncode == 0 and res.stdout.strip() == f"tinyrps {version('tinyrps')}"


def all_options():
    """(command, action) for every option of every subcommand."""
    import argparse

    from tinyrps.interfaces.cli import build_parser

    def walk(parser, name):
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for sub_name, sub in action.choices.items():
                    yield from walk(sub, f"{name} {sub_name}".strip())
            elif action.option_strings and action.help != argparse.SUPPRESS:   # not an old spelling
                yield name, parser, action
    return list(walk(build_parser(), ""))


def test_every_option_shows_its_default():
    checked = 0
    for command, parser, action in all_options():
        if action.required or action.nargs == 0:    # required options and on/off flags have no default
            continue
        text = parser._get_formatter()._get_help_string(action)
        assert "default" in text or "required" in text, f"tinyrps {command} {action.option_strings[0]}: '{text}'"
        checked += 1
    assert checked >= 20


@pytest.mark.parametrize("args,option", [
    (["data", "--seed", "-1"], "--seed"),
    (["data", "--per-class", "0"], "--per-class"),
    (["train", "--epochs", "0"], "--epochs"),
    (["all", "--seed", "-1"], "--seed"),
    (["all", "--epochs", "0"], "--epochs"),
    (["play", "--model", "X.pte", "--seed", "-5"], "--seed"),
    (["eval", "--run", "RUN", "--limit", "0"], "--limit"),
    (["eval", "--run", "RUN", "--limit", "-3"], "--limit"),
    (["bench", "--run", "RUN", "--runs", "0"], "--runs"),
    (["data", "--seed", "two"], "--seed"),
])
def test_numbers_are_checked_before_any_work(cli, tmp_path, args, option):
    out = tmp_path / "out"
    if args[0] in ("data", "all", "train"):
        args = args + ["--out", str(out)] + (["--data", str(tmp_path)] if args[0] == "train" else [])
    assert_user_error(cli(*args), option)
    assert not out.exists()         # nothing made, nothing rendered


def test_make_data_refuses_a_negative_seed_and_leaves_no_folder(tmp_path):
    from tinyrps.infra.errors import UserError
    from tinyrps.data import make_data
    with pytest.raises(UserError, match="--seed"):
        make_data(tmp_path / "data", seed=-1, per_class=1, quiet=True)
    assert not (tmp_path / "data").exists()


def test_eval_limit_takes_exactly_that_many_images(cli, trained_run):
    res = cli("eval", "--run", trained_run, "--program", "eager", "--limit", "5", "--json")
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["test_images"] == 5


def test_eval_limit_is_checked_in_the_api_too(trained_run):
    from tinyrps.infra.errors import UserError
    from tinyrps.evaluate import evaluate
    for limit in (0, -3):
        with pytest.raises(UserError, match="--limit"):
            evaluate(trained_run, only=["eager"], limit=limit, quiet=True)


def test_bench_refuses_an_unknown_program(cli, trained_run, exported):
    exported("fp32")
    assert_user_error(cli("bench", "--run", trained_run, "--program", "bogus"), "unknown program 'bogus'", "fp32")
    assert_user_error(cli("eval", "--run", trained_run, "--program", "bogus"), "unknown program 'bogus'")


@pytest.mark.parametrize("command", ["eval", "bench"])
def test_the_old_spelling_of_program_still_works_and_help_says_so(command):
    from tinyrps.interfaces.cli import build_parser
    from tinyrps.interfaces.cli.options import OLD_PROGRAM_OPTION
    parser = build_parser()
    old = parser.parse_args([command, "--run", "RUN", "--variant", "fp32", "--program", "cortex-m55"])
    assert old.program == ["fp32", "cortex-m55"]
    sub = next(a for a in parser._actions if a.dest == "command").choices[command]
    text = sub.format_help()
    assert "--program T" in text and OLD_PROGRAM_OPTION in " ".join(text.split())
    assert "--variant" not in sub.format_usage()


# ── messages that name the real cause ─────────────────────────────────────────
def test_a_folder_given_as_the_model(cli, tmp_path):
    assert_user_error(cli("play", "--model", tmp_path, "--moves", "r"), "is a folder")
    assert_user_error(cli("classify", "--model", tmp_path, tmp_path / "x.png"), "is a folder")


def test_options_are_named_as_typed(cli, trained_run):
    assert_user_error(cli("export", "--run", trained_run, "--target", "fp32", "--system-config", "X"),
                      "does not take --system-config")


def test_program_family_takes_its_article(cli, exported, descriptor_like, tmp_path):
    program = tmp_path / "npu.pte"
    program.write_bytes(exported("fp32").read_bytes())
    descriptor_like(program, exported("ethos-u85-128"))
    assert_user_error(cli("play", "--model", program, "--device", "native", "--moves", "r"),
                      "is an ethos-u program", "--device npu-ref")


def test_port_is_for_the_mcu_only(cli, exported):
    assert_user_error(cli("play", "--model", exported("fp32"), "--device", "executorch", "--port", "/dev/ttyACM0",
                          "--moves", "r"), "--port is for --device mcu")


# ── errors: what the user can fix is one line, a bug is a traceback ────────────
def run_main(monkeypatch, capsys, error, argv=("data", "--out", "somewhere")):
    """tinyrps.interfaces.cli.main with the data stage replaced by one that raises `error`."""
    import tinyrps.data
    from tinyrps.interfaces.cli import main

    def fail(*_, **__):
        raise error
    monkeypatch.setattr(tinyrps.data, "make_data", fail)
    code = main(list(argv))
    return code, capsys.readouterr().err


@pytest.mark.parametrize("error", [TimeoutError("timed out"), ConnectionResetError(104, "Connection reset by peer"),
                                   OSError(5, "Input/output error"), KeyError("split")])
def test_an_internal_failure_shows_its_traceback(monkeypatch, capsys, tmp_path, error):
    code, err = run_main(monkeypatch, capsys, error, ("data", "--out", str(tmp_path / "d")))
    assert code == 1
    assert "Traceback" in err and "this is a bug in tinyrps" in err and "report it" in err


def test_a_serial_exception_is_not_a_file_problem(monkeypatch, capsys, tmp_path):
    import serial
    code, err = run_main(monkeypatch, capsys, serial.SerialException(2, "could not open port /dev/ttyX"),
                         ("data", "--out", str(tmp_path / "d")))
    assert code == 1 and "Traceback" in err


@pytest.mark.parametrize("error,needle", [
    (PermissionError(13, "Permission denied", "/x/train.npz"), "Permission denied: /x/train.npz"),
    (OSError(28, "No space left on device"), "No space left on device"),
    (IsADirectoryError(21, "Is a directory", "/x"), "Is a directory: /x"),
    (OSError(30, "Read-only file system", "/x"), "Read-only file system"),
])
def test_a_file_problem_the_user_can_fix_is_one_line(monkeypatch, capsys, tmp_path, error, needle):
    code, err = run_main(monkeypatch, capsys, error, ("data", "--out", str(tmp_path / "d")))
    assert code == 2 and "Traceback" not in err
    assert err.strip().splitlines() == [err.strip()] and needle in err


def test_debug_shows_the_traceback_of_a_user_error(tmp_path):
    import os
    import subprocess
    import sys
    res = subprocess.run([sys.executable, "-m", "tinyrps", "play", "--model", str(tmp_path / "none.pte")],
                         capture_output=True, text=True, env={**os.environ, "TINYRPS_DEBUG": "1"})
    assert res.returncode == 2
    assert "Traceback" in res.stderr and res.stderr.strip().splitlines()[-1].startswith("tinyrps: error: model file")


def test_a_full_disk_during_data_leaves_nothing_behind(tmp_path):
    """A file-size limit makes writes fail with EFBIG, as a full disk fails them with ENOSPC."""
    import os
    import resource
    import signal
    import subprocess
    import sys

    def small_files():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)      # a failed write, not a killed process
        resource.setrlimit(resource.RLIMIT_FSIZE, (64 * 1024, 64 * 1024))

    existing, new = tmp_path / "existing", tmp_path / "new"
    existing.mkdir()
    for out in (existing, new):
        res = subprocess.run([sys.executable, "-m", "tinyrps", "data", "--out", str(out), "--per-class", "200",
                              "--quiet"], capture_output=True, text=True, preexec_fn=small_files, env=os.environ)
        assert_user_error(res, "File too large", "free some space")
    assert list(existing.iterdir()) == []        # no train.npz.tmp.npz or other half-written file
    assert not new.exists()                      # a folder made for the data set is removed again


# ── warnings: only the known noise is silenced ───────────────────────────────
def test_the_cli_silences_only_known_warnings():
    import warnings

    from tinyrps.infra.library_noise import quiet_libraries
    with warnings.catch_warnings(record=True) as caught:
        warnings.resetwarnings()
        quiet_libraries()
        warnings.warn("something the user should see", UserWarning)
        warnings.warn("a future change", FutureWarning)
        warnings.warn("`isinstance(treespec, LeafSpec)` is deprecated, use ...", FutureWarning)
    assert [str(w.message) for w in caught] == ["something the user should see", "a future change"]


def test_the_test_suite_hides_no_whole_category_of_warnings():
    import warnings
    with warnings.catch_warnings(record=True) as caught:     # keeps the suite's filters
        for category in (UserWarning, FutureWarning, DeprecationWarning):
            warnings.warn(f"a {category.__name__} of our own", category)
    assert [w.category for w in caught] == [UserWarning, FutureWarning, DeprecationWarning]


def test_the_readme_synopsis_names_every_command_and_option():
    import re
    from pathlib import Path
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    synopsis = readme.split("## Commands", 1)[1].split("```", 2)[1].splitlines()
    for command, _, action in all_options():
        if "--help" in action.option_strings:
            continue
        prefix = f"tinyrps {command}".strip()
        lines = " ".join(line for line in synopsis if line == prefix or line.startswith(prefix + " "))
        assert lines, f"`{prefix}` is missing from the README's synopsis"
        assert any(re.search(rf"(?<![\w-]){re.escape(o)}(?![\w-])", lines) for o in action.option_strings), \
            f"{action.option_strings[0]} of `{prefix}` is missing from the README's synopsis"
