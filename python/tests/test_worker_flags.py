"""The worker's number flags (worker/flags.py): argparse refuses a bad value, naming the flag."""

import pytest

from colocated_wire.worker.main import parse_args


@pytest.mark.parametrize(
    ("flag", "value", "said"),
    [
        ("--max-concurrent-calls", "0", "must be at least 1, not 0"),
        ("--max-inflight-bytes", "-5", "must be at least 1, not -5"),
        ("--program-cache", "many", "invalid positive value: 'many'"),
        ("--retain-freed-bytes", "-1", "must be at least 0, not -1"),
        ("--retain-freed-bytes", "1.5", "invalid non_negative value: '1.5'"),
        ("--unhealthy-after", "0", "must be more than 0 seconds, not 0"),
        ("--unhealthy-after", "soon", "invalid positive_seconds value: 'soon'"),
        ("--metrics-port", "-1", "must be at least 0, not -1"),
        ("--max-sessions", "-1", "must be at least 0, not -1"),
        ("--max-sessions", "some", "invalid non_negative value: 'some'"),
    ],
)
def test_a_bad_number_is_refused_naming_the_flag(capsys, flag, value, said):
    with pytest.raises(SystemExit):
        parse_args([flag, value])
    assert f"argument {flag}: {said}" in capsys.readouterr().err


def test_the_smallest_values_are_taken():
    args = parse_args(
        ["--max-concurrent-calls", "1", "--retain-freed-bytes", "0", "--max-sessions", "0"]
    )
    assert (args.max_concurrent_calls, args.retain_freed_bytes, args.max_sessions) == (1, 0, 0)


def test_device_turn_is_auto_unless_told_and_takes_only_its_three_settings(capsys):
    assert parse_args([]).device_turn == "auto"
    assert parse_args(["--device-turn", "off"]).device_turn == "off"
    with pytest.raises(SystemExit):
        parse_args(["--device-turn", "sometimes"])
    assert "argument --device-turn: invalid choice: 'sometimes'" in capsys.readouterr().err


def test_a_worker_serves_8_sessions_unless_told():
    assert parse_args([]).max_sessions == 8
    assert parse_args(["--max-sessions", "64"]).max_sessions == 64
