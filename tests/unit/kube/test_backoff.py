import random

from hypothesis import given
from hypothesis import strategies as st

from tas.kube.retry import Backoff, PerKeyBackoff


@given(failures=st.integers(min_value=1, max_value=10**9), seed=st.integers(0, 2**32))
def test_delay_is_positive_capped_and_never_overflows(failures: int, seed: int) -> None:
    backoff = Backoff(base=0.5, cap=30.0, rng=random.Random(seed))
    delay = backoff.delay(failures)
    assert 0 < delay <= 30.0


def test_delay_grows_then_stops_at_the_cap() -> None:
    backoff = Backoff(base=1.0, cap=8.0, rng=random.Random(1))
    ceilings = [1.0, 2.0, 4.0, 8.0, 8.0, 8.0]
    for failures, ceiling in enumerate(ceilings, start=1):
        delay = backoff.delay(failures)
        assert ceiling / 2 <= delay <= ceiling, (failures, delay)


def test_jitter_spreads_retries_of_many_objects() -> None:
    backoff = Backoff(base=1.0, cap=30.0, rng=random.Random(7))
    delays = {round(backoff.delay(5), 3) for _ in range(50)}
    assert len(delays) > 40  # not in lock step


def test_retry_after_is_honoured_but_bounded() -> None:
    backoff = Backoff(base=0.1, cap=5.0)
    assert backoff.delay(1, retry_after=7) >= 7
    assert backoff.delay(1, retry_after=10**6) <= 300.0  # a hostile header cannot park us for good


def test_per_key_counts_are_separate_and_success_forgets() -> None:
    keys = PerKeyBackoff(Backoff(base=1.0, cap=100.0, rng=random.Random(3)))
    for _ in range(5):
        keys.failed("a")
    assert keys.failed("b") <= 1.0  # b's first failure is not a's sixth
    keys.succeeded("a")
    assert keys.failed("a") <= 1.0
    for _ in range(2_000):  # far past any exponent: still a number, still capped
        delay = keys.failed("c")
    assert delay <= 100.0
