"""The certificate keeper's decisions against an in-memory API: a Secret guarded by
resourceVersion and the two webhook configurations. (Against a real API server, with the
chart's RBAC: e2e/test_webhooks.py.)"""

from __future__ import annotations

import asyncio
import base64
import copy
import datetime
from pathlib import Path

import pytest

from tas.api.constants import CONVERTED_CRDS
from tas.kube import CRDS, MERGE, STRATEGIC, KubeError
from tas.webhooks import certs
from tas.webhooks.rotation import CONFIG_KINDS, CertificateError, WebhookCertificates

SECRET = "/api/v1/namespaces/tas-system/secrets/cert"
NAME = "tas-operator.kueue.x-k8s.io"
HOSTS = ["127.0.0.1"]


class FakeApi:
    """A Secret with resourceVersion checks, and webhook configurations patched by name."""

    def __init__(self, *, secret: bool = True, configs: bool = True) -> None:
        self.objects: dict[str, dict] = {}
        self.version = 0
        self.patches: list[tuple[str, dict, str]] = []
        self.replaces = 0
        self.before_replace = None  # a hook: another replica writing first
        if secret:
            self.put(SECRET, {"metadata": {"name": "cert"}})
        if configs:
            for kind in CONFIG_KINDS:
                hooks = [{"name": f"h{i}.{NAME}", "clientConfig": {"url": "x"}} for i in range(2)]
                self.put(
                    f"/apis/admissionregistration.k8s.io/v1/{kind}/{NAME}", {"webhooks": hooks}
                )
            for crd in CONVERTED_CRDS:
                conversion = {"strategy": "Webhook", "webhook": {"clientConfig": {"url": "x"}}}
                self.put(f"{CRDS}/{crd}", {"spec": {"conversion": conversion}})

    def put(self, path: str, obj: dict) -> dict:
        self.version += 1
        obj = copy.deepcopy(obj)
        obj.setdefault("metadata", {})["resourceVersion"] = str(self.version)
        self.objects[path] = obj
        return copy.deepcopy(obj)

    async def get(self, path: str):
        return copy.deepcopy(self.objects.get(path))

    async def replace(self, path: str, body: dict):
        if self.before_replace:
            hook, self.before_replace = self.before_replace, None
            await hook()
        if body["metadata"]["resourceVersion"] != self.objects[path]["metadata"]["resourceVersion"]:
            raise KubeError(409, "conflict")
        self.replaces += 1
        return self.put(path, body)

    async def patch(self, path: str, body: dict, content_type: str):
        self.patches.append((path, body, content_type))
        if path.startswith(CRDS):  # a merge patch of the conversion's client config
            client = self.objects[path]["spec"]["conversion"]["webhook"]["clientConfig"]
            client.update(body["spec"]["conversion"]["webhook"]["clientConfig"])
            return self.objects[path]
        by_name = {w["name"]: w for w in body["webhooks"]}
        for hook in self.objects[path]["webhooks"]:
            if hook["name"] in by_name:
                hook["clientConfig"].update(by_name[hook["name"]]["clientConfig"])
        return self.objects[path]

    def secret_data(self) -> dict[str, bytes]:
        return {k: base64.b64decode(v) for k, v in self.objects[SECRET].get("data", {}).items()}

    def bundles(self) -> set[str]:
        """The CA bundle of every webhook configuration's hook and every CRD's conversion."""
        return {
            hook["clientConfig"].get("caBundle")
            for path, obj in self.objects.items()
            if "webhooks" in obj
            for hook in obj["webhooks"]
        } | {
            obj["spec"]["conversion"]["webhook"]["clientConfig"].get("caBundle")
            for path, obj in self.objects.items()
            if path.startswith(CRDS)
        }


def keeper(api, tmp_path: Path, name: str = "a", **kw) -> WebhookCertificates:
    return WebhookCertificates(
        api, tmp_path / name, HOSTS, NAME, secret=("tas-system", "cert"), **kw
    )


def test_an_empty_secret_is_filled_served_and_its_ca_put_into_every_webhook(tmp_path):
    api = FakeApi()
    one = keeper(api, tmp_path)
    asyncio.run(one.check())
    data = api.secret_data()
    assert certs.plan(data, HOSTS, datetime.datetime.now(datetime.UTC)) is None
    for path, name in zip(one.files, certs.SERVED, strict=True):
        assert path.read_bytes() == data[name]
    assert api.bundles() == {base64.b64encode(data[certs.CA_CRT]).decode()}
    # Configurations by webhook name, CRDs by merge: nothing else changes.
    assert all(ct == (MERGE if p.startswith(CRDS) else STRATEGIC) for p, _, ct in api.patches)
    assert sum(p.startswith(CRDS) for p, _, _ in api.patches) == len(CONVERTED_CRDS)
    assert all(
        h["clientConfig"]["url"] == "x" for o in api.objects.values() for h in o.get("webhooks", [])
    )
    assert all(
        o["spec"]["conversion"]["webhook"]["clientConfig"]["url"] == "x"
        for p, o in api.objects.items()
        if p.startswith(CRDS)
    )


def test_a_second_check_writes_nothing(tmp_path):
    api = FakeApi()
    one = keeper(api, tmp_path)
    asyncio.run(one.check())
    patches, replaces = len(api.patches), api.replaces
    asyncio.run(one.check())
    assert (len(api.patches), api.replaces) == (patches, replaces)


def test_two_replicas_at_once_end_with_one_certificate(tmp_path):
    """The second replica's write is refused (409): it reads the first one's and serves it."""
    api = FakeApi()
    first, second = keeper(api, tmp_path, "a"), keeper(api, tmp_path, "b")
    api.before_replace = first.check  # `first` writes while `second` is deciding
    asyncio.run(second.check())
    assert api.replaces == 1
    assert first.data == second.data == api.secret_data()
    assert first.files[0].read_bytes() == second.files[0].read_bytes()


def test_a_ca_bundle_someone_removed_is_put_back(tmp_path):
    api = FakeApi()
    one = keeper(api, tmp_path)
    asyncio.run(one.check())
    path = f"/apis/admissionregistration.k8s.io/v1/{CONFIG_KINDS[0]}/{NAME}"
    del api.objects[path]["webhooks"][1]["clientConfig"]["caBundle"]
    api.patches.clear()
    asyncio.run(one.check())
    [(patched, body, _)] = api.patches
    assert patched == path and [w["name"] for w in body["webhooks"]] == [f"h1.{NAME}"]


def test_missing_configurations_are_reported_not_created(tmp_path, caplog):
    api = FakeApi(configs=False)
    one = keeper(api, tmp_path)
    asyncio.run(one.check())
    asyncio.run(one.check())
    assert not api.patches
    # once per configuration kind and per CRD with a conversion webhook
    expected = len(CONFIG_KINDS) + len(CONVERTED_CRDS)
    assert sum("install the chart" in r.message for r in caplog.records) == expected


def test_a_missing_secret_is_a_clear_error(tmp_path):
    one = keeper(FakeApi(secret=False), tmp_path)
    with pytest.raises(CertificateError, match="tas-system/cert not found"):
        asyncio.run(one.check())


def test_without_a_secret_the_certificate_is_made_in_memory_and_renewed(tmp_path):
    api = FakeApi(secret=False)
    one = WebhookCertificates(api, tmp_path / "x", HOSTS, NAME)
    asyncio.run(one.check())
    first = one.data
    later = datetime.datetime.now(datetime.UTC) + datetime.timedelta(days=300)
    asyncio.run(one.check(now=later))
    assert one.data[certs.TLS_CRT] != first[certs.TLS_CRT]
    assert one.files[0].read_bytes() == one.data[certs.TLS_CRT]


def test_failures_back_off_with_a_cap_and_recover(tmp_path, monkeypatch):
    """The API server away: checks fail and back off (never faster than the backoff, never
    slower than its cap), then the first good check makes it ready."""
    api = FakeApi()
    down = {"left": 3}
    real_get = api.get

    async def flaky(path):
        if down["left"]:
            down["left"] -= 1
            raise KubeError(0, "connection refused")
        return await real_get(path)

    api.get = flaky
    delays = []
    real_sleep = asyncio.sleep

    async def fake_sleep(seconds):
        delays.append(seconds)
        if len(delays) > 3:
            raise asyncio.CancelledError
        await real_sleep(0)

    one = keeper(api, tmp_path)

    async def go():
        monkeypatch.setattr(asyncio, "sleep", fake_sleep)
        try:
            await one.run()
        except asyncio.CancelledError:
            pass
        finally:
            monkeypatch.undo()

    asyncio.run(go())
    assert len(delays) == 4
    assert all(0.5 <= d <= 60 for d in delays[:3])
    assert one.ready.is_set()
    assert delays[3] == one.check_every  # then checked every check_every


def test_a_provisional_certificate_lets_the_server_start_before_the_secret_is_read(tmp_path):
    one = keeper(FakeApi(), tmp_path)
    one.provisional()
    assert all(p.exists() for p in one.files)
    before = one.files[0].read_bytes()
    asyncio.run(one.check())
    assert one.files[0].read_bytes() != before  # the Secret's replaces it


def test_the_converted_crds_are_those_whose_crds_ask_for_the_conversion_webhook() -> None:
    """The certificate keeper names them without loading the models; crdgen reads the same."""
    from tas.api.models import RESOURCES

    assert {r.crd.plural for r in RESOURCES if r.crd.conversion_webhook} == {
        "clusterqueues",
        "cohorts",
        "localqueues",
        "workloads",
    }
    assert len(CONVERTED_CRDS) == 4


def test_readiness_does_not_wait_for_the_conversion_bundles(tmp_path):
    """Admitted Jobs start through the admission webhooks, which the CRDs' reads would delay."""

    class SlowCrds(FakeApi):
        def __init__(self) -> None:
            super().__init__()
            self.release = asyncio.Event()

        async def get(self, path: str):
            if path.startswith(CRDS):
                await self.release.wait()
            return await super().get(path)

    async def go():
        api = SlowCrds()
        one = keeper(api, tmp_path)
        check = asyncio.create_task(one.check())
        await asyncio.wait_for(one.ready.wait(), 5)
        crd_patches_while_ready = sum(p.startswith(CRDS) for p, _, _ in api.patches)
        api.release.set()
        await asyncio.wait_for(check, 5)
        return crd_patches_while_ready, api

    before, api = asyncio.run(go())
    assert before == 0
    assert sum(p.startswith(CRDS) for p, _, _ in api.patches) == len(CONVERTED_CRDS)
    assert len(api.bundles()) == 1
