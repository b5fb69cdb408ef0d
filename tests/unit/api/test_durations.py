"""The one Go-duration parser every duration a user writes goes through."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tas.api.durations import MAX_SECONDS, go_duration


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("0", 0.0),
        ("90s", 90.0),
        ("1h30m", 5400.0),
        ("1.5s", 1.5),
        (".5m", 30.0),
        ("300ms", 0.3),
        ("2us", 2e-6),
        ("2µs", 2e-6),
        ("10ns", 1e-8),
        ("-2m", -120.0),
        ("+3s", 3.0),
        ("1m1m", 120.0),  # Go adds repeated units
    ],
)
def test_what_go_accepts(text, seconds):
    assert go_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize(
    "text", ["", "5", "m", "1x", "1h 30m", "1.s5", "--1s", "1d", "9999999999h", None, 5, "\uff10s"]
)
def test_what_go_refuses_is_none(text):
    assert go_duration(text) is None


@given(
    st.lists(
        st.tuples(st.integers(0, 10_000), st.sampled_from(["h", "m", "s", "ms"])),
        min_size=1,
        max_size=4,
    )
)
def test_written_parts_add_up(parts):
    unit = {"h": 3600, "m": 60, "s": 1, "ms": 0.001}
    text = "".join(f"{n}{u}" for n, u in parts)
    assert go_duration(text) == pytest.approx(sum(n * unit[u] for n, u in parts))


@given(st.text(max_size=30))
def test_any_text_is_a_bounded_duration_or_none(text):
    seconds = go_duration(text)
    assert seconds is None or abs(seconds) <= MAX_SECONDS
