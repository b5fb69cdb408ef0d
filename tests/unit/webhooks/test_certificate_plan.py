"""The webhooks' certificates: what `plan` keeps, renews and adds, and files private from birth.

(The real thing, two operators sharing the chart's Secret on a real API server, is in
e2e/test_webhooks.py.)
"""

from __future__ import annotations

import datetime
import os
import stat
from pathlib import Path

import pytest
from cryptography import x509
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tas.webhooks import certs

NOW = datetime.datetime(2026, 11, 24, tzinfo=datetime.UTC)
DAY = datetime.timedelta(days=1)
HOSTS = ["tas-operator-webhook.tas-system.svc", "127.0.0.1"]


def served(data: dict[str, bytes]) -> x509.Certificate:
    return x509.load_pem_x509_certificate(data[certs.TLS_CRT])


def bundle(data: dict[str, bytes]) -> list[x509.Certificate]:
    return x509.load_pem_x509_certificates(data[certs.CA_CRT])


def names(cert: x509.Certificate) -> set[str]:
    san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    return {str(n) for n in san.get_values_for_type(x509.DNSName)} | {
        str(n) for n in san.get_values_for_type(x509.IPAddress)
    }


def trusted(data: dict[str, bytes]) -> bool:
    """The serving certificate verifies against some CA of the bundle, as the API server checks."""
    cert = served(data)
    for ca in bundle(data):
        try:
            cert.verify_directly_issued_by(ca)
            return True
        except Exception:
            continue
    return False


def test_an_empty_secret_gets_a_ca_and_a_serving_certificate_for_every_host():
    data = certs.plan({}, HOSTS, NOW)
    assert data is not None and set(data) == {
        certs.TLS_CRT,
        certs.TLS_KEY,
        certs.CA_CRT,
        certs.CA_KEY,
    }
    assert trusted(data)
    assert names(served(data)) == set(HOSTS)
    assert served(data).not_valid_after_utc == NOW + certs.DEFAULT_LIFETIMES.serving
    assert bundle(data)[0].not_valid_after_utc == NOW + certs.DEFAULT_LIFETIMES.ca


def test_a_good_secret_is_left_alone():
    data = certs.plan({}, HOSTS, NOW)
    assert certs.plan(data, HOSTS, NOW) is None
    assert certs.plan(data, HOSTS[:1], NOW + 200 * DAY) is None  # fewer hosts: still fine


def test_the_serving_certificate_is_renewed_with_a_third_of_its_life_left_and_the_ca_kept():
    data = certs.plan({}, HOSTS, NOW)
    assert certs.plan(data, HOSTS, NOW + 240 * DAY) is None
    later = NOW + 250 * DAY
    renewed = certs.plan(data, HOSTS, later)
    assert renewed is not None and trusted(renewed)
    assert renewed[certs.CA_CRT] == data[certs.CA_CRT]  # same CA: no caBundle change needed
    assert renewed[certs.CA_KEY] == data[certs.CA_KEY]
    assert served(renewed).not_valid_after_utc == later + certs.DEFAULT_LIFETIMES.serving


def test_a_ca_near_its_end_is_replaced_and_the_old_one_stays_trusted_until_it_expires():
    data = certs.plan({}, HOSTS, NOW)
    late = NOW + 3650 * DAY - 300 * DAY
    renewed = certs.plan(data, HOSTS, late)
    assert renewed is not None
    old_ca = bundle(data)[0]
    new_ca, *rest = bundle(renewed)
    assert new_ca != old_ca and rest == [old_ca]
    served(renewed).verify_directly_issued_by(new_ca)  # signed by the new one
    # A replica still serving the old certificate stays trusted by the new bundle.
    served(data).verify_directly_issued_by(old_ca)
    # Once the old CA has expired it leaves the bundle.
    after = certs.plan(renewed, HOSTS, NOW + 3651 * DAY)
    assert after is not None and bundle(after) == [new_ca]


def test_a_missing_host_renews_the_serving_certificate_keeping_the_names_it_had():
    data = certs.plan({}, ["a.svc"], NOW)
    renewed = certs.plan(data, ["b.svc"], NOW)
    assert renewed is not None and names(served(renewed)) == {"a.svc", "b.svc"}
    assert certs.plan(renewed, ["a.svc"], NOW) is None


@pytest.mark.parametrize(
    "damage",
    [
        {certs.TLS_CRT: b"garbage"},
        {certs.TLS_KEY: b""},
        {certs.CA_KEY: b"-----BEGIN PRIVATE KEY-----\nnope\n-----END PRIVATE KEY-----\n"},
        {certs.CA_CRT: b""},
    ],
    ids=["bad-cert", "no-key", "bad-ca-key", "no-ca"],
)
def test_damaged_data_is_replaced_by_a_working_certificate(damage):
    data = {**certs.plan({}, HOSTS, NOW), **damage}
    renewed = certs.plan(data, HOSTS, NOW)
    assert renewed is not None and trusted(renewed)
    assert certs.plan(renewed, HOSTS, NOW) is None


def test_a_serving_key_that_does_not_match_its_certificate_is_replaced():
    one, other = certs.plan({}, HOSTS, NOW), certs.plan({}, HOSTS, NOW)
    mixed = {**one, certs.TLS_KEY: other[certs.TLS_KEY]}
    renewed = certs.plan(mixed, HOSTS, NOW)
    assert renewed is not None and renewed[certs.TLS_KEY] != other[certs.TLS_KEY]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.integers(min_value=0, max_value=4000), min_size=1, max_size=6),
    st.lists(st.sampled_from(["a.svc", "b.svc", "127.0.0.1", "::1"]), min_size=1, max_size=3),
)
def test_whatever_happens_over_time_the_result_is_trusted_and_stable(days, hosts):
    """Checks at any days (in order), for any hosts: after each, the Secret serves a trusted,
    unexpired certificate naming the hosts, and checking again at once changes nothing."""
    data: dict[str, bytes] = {}
    for day in sorted(days):
        now = NOW + day * DAY
        data = certs.plan(data, hosts, now) or data
        assert trusted(data)
        assert set(hosts) <= names(served(data))
        assert served(data).not_valid_after_utc > now
        assert certs.plan(data, hosts, now) is None
        assert certs.renewal_due(data) > now


def test_renewal_due_is_when_the_serving_certificate_wants_renewing():
    data = certs.plan({}, HOSTS, NOW)
    due = certs.renewal_due(data)
    assert (
        due == NOW + certs.DEFAULT_LIFETIMES.serving - certs.DEFAULT_LIFETIMES.serving_renew_before
    )
    assert certs.plan(data, HOSTS, due - DAY) is None
    assert certs.plan(data, HOSTS, due + DAY) is not None


def test_served_files_are_private_from_their_first_byte(tmp_path: Path):
    old = os.umask(0)  # the most permissive umask: modes must not depend on it
    try:
        directory = tmp_path / "certs"
        directory.mkdir(mode=0o777)
        (directory / certs.TLS_KEY).write_bytes(b"old")
        os.chmod(directory / certs.TLS_KEY, 0o644)  # a world-readable leftover
        data = certs.plan({}, HOSTS, NOW)
        assert certs.write_served(directory, data) is True
    finally:
        os.umask(old)
    for name in certs.SERVED:
        assert stat.S_IMODE((directory / name).stat().st_mode) == 0o600
        assert (directory / name).read_bytes() == data[name]
    assert not (directory / certs.CA_KEY).exists()  # the CA's key stays in the Secret
    assert certs.write_served(directory, data) is False  # nothing to change


def test_write_private_never_exposes_a_partly_written_file(tmp_path: Path, monkeypatch):
    """The new content is written beside the file and renamed over it: a reader sees the old
    file or the new one, never a mix, and never a world-readable one."""
    path = tmp_path / "tls.key"
    path.write_bytes(b"old")
    opened_modes = []
    real_open = os.open

    def spy(p, flags, mode=0o777, *a, **kw):
        opened_modes.append(mode)
        return real_open(p, flags, mode, *a, **kw)

    monkeypatch.setattr(os, "open", spy)
    certs.write_private(path, b"new")
    assert opened_modes == [0o600]
    assert path.read_bytes() == b"new"
    assert [p.name for p in tmp_path.iterdir()] == ["tls.key"]


def test_at_the_moment_renewal_is_due_the_certificate_is_renewed():
    """renewal_due and plan agree at the boundary (found by the property test above: certificate
    times are whole seconds, so a check can fall exactly on the due time)."""
    data = certs.plan({}, HOSTS, NOW)
    due = certs.renewal_due(data)
    renewed = certs.plan(data, HOSTS, due)
    assert renewed is not None
    assert served(renewed).not_valid_after_utc > served(data).not_valid_after_utc
    assert certs.renewal_due(renewed) > due
