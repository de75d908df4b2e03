"""Each user error: one line on stderr that says what is wrong, exit code 2, no traceback."""


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
    assert_user_error(cli("play", "--model", exported("fp32"), "--device", "tpu"), "tpu", "host")


def test_bad_moves(cli, exported):
    assert_user_error(cli("play", "--model", exported("fp32"), "--moves", "rock,spock"), "rock/paper/scissors")


def test_eager_device_with_a_pte(cli, exported):
    assert_user_error(cli("play", "--model", exported("fp32"), "--device", "eager", "--moves", "r"), "model.pt")
