"""A thin async client over the `kubernetes` package: JSON dicts in and out, no typed models.

Calls run in a worker thread so the event loop never blocks on I/O. Every write the operator
makes goes through here, which keeps the count of API writes easy to measure.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass

import kubernetes
from kubernetes.client.exceptions import ApiException

from tas.api.conditions import now_rfc3339

log = logging.getLogger(__name__)

MERGE = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
KUEUE = "/apis/kueue.x-k8s.io/v1beta1"


class KubeError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"{status}: {message}")
        self.status = status


@dataclass
class Ref:
    api_version: str
    kind: str
    namespace: str
    name: str
    uid: str


def load_api_client(kubeconfig: str | None = None) -> kubernetes.client.ApiClient:
    """In-cluster credentials when running in a pod, else the kubeconfig."""
    if kubeconfig is None:
        try:
            kubernetes.config.load_incluster_config()
            return kubernetes.client.ApiClient()
        except kubernetes.config.ConfigException:
            pass
    config = kubernetes.client.Configuration()
    kubernetes.config.load_kube_config(config_file=kubeconfig, client_configuration=config)
    return kubernetes.client.ApiClient(configuration=config)


class Kube:
    def __init__(
        self, api_client: kubernetes.client.ApiClient, component: str = "tas-operator"
    ) -> None:
        self.api_client = api_client
        self.component = component
        self.writes: Counter[str] = Counter()  # method + kind, for measurements

    def _call(self, method: str, path: str, body: object, content_type: str | None) -> object:
        headers = {"Accept": "application/json"}
        if content_type:
            headers["Content-Type"] = content_type
        method, url, headers, body, post = self.api_client.param_serialize(
            method, path, header_params=headers, body=body, auth_settings=["BearerToken"]
        )
        try:
            response = self.api_client.call_api(
                method, url, headers, body, post, _request_timeout=60
            )
        except ApiException as exc:  # transport-level refusals
            raise KubeError(exc.status or 0, str(exc.reason)) from None
        data = response.read()
        if not 200 <= response.status < 300:
            message = data.decode(errors="replace") if isinstance(data, bytes) else str(data)
            with contextlib.suppress(ValueError, AttributeError):  # a Status object names the cause
                message = json.loads(message).get("message", message)
            raise KubeError(response.status, message)
        return json.loads(data) if data else None

    async def request(
        self, method: str, path: str, body: object = None, content_type: str | None = None
    ):
        if method != "GET":
            self.writes[method] += 1
            log.debug("api-write %s %s", method, path)
        return await asyncio.to_thread(self._call, method, path, body, content_type)

    async def get(self, path: str) -> dict | None:
        try:
            return await self.request("GET", path)
        except KubeError as exc:
            if exc.status == 404:
                return None
            raise

    async def patch(self, path: str, body: object, content_type: str = MERGE) -> dict:
        return await self.request("PATCH", path, body, content_type)

    async def create(self, path: str, body: Mapping) -> dict:
        return await self.request("POST", path, body, "application/json")

    async def delete(self, path: str) -> None:
        try:
            await self.request(
                "DELETE", path, {"propagationPolicy": "Background"}, "application/json"
            )
        except KubeError as exc:
            if exc.status != 404:
                raise

    async def patch_workload_status(
        self, namespace: str, name: str, resource_version: str, status: Mapping
    ) -> bool:
        """Merge-patch a Workload's status, guarded by the resourceVersion it was decided on.
        False when the object changed or went away meanwhile: the caller's decision is stale,
        and the newer object's watch event brings it back to decide again."""
        body = {"metadata": {"resourceVersion": resource_version}, "status": dict(status)}
        try:
            await self.patch(workload_path(namespace, name) + "/status", body)
        except KubeError as exc:
            if exc.status in (404, 409):
                return False
            raise
        return True

    async def event(self, ref: Ref, type_: str, reason: str, message: str) -> None:
        """A core/v1 Event, so `kubectl describe` shows it; never fails the caller."""
        now = now_rfc3339()
        body = {
            "metadata": {"generateName": ref.name + ".", "namespace": ref.namespace},
            "involvedObject": {
                "apiVersion": ref.api_version,
                "kind": ref.kind,
                "name": ref.name,
                "namespace": ref.namespace,
                "uid": ref.uid,
            },
            "type": type_,
            "reason": reason,
            "message": message[:1024],
            "source": {"component": self.component},
            "reportingComponent": self.component,
            "firstTimestamp": now,
            "lastTimestamp": now,
            "count": 1,
        }
        try:
            await self.create(f"/api/v1/namespaces/{ref.namespace}/events", body)
        except KubeError as exc:
            log.warning(
                "could not record event %s on %s/%s: %s", reason, ref.namespace, ref.name, exc
            )


def workload_path(namespace: str, name: str) -> str:
    return f"{KUEUE}/namespaces/{namespace}/workloads/{name}"


def job_path(namespace: str, name: str) -> str:
    return f"/apis/batch/v1/namespaces/{namespace}/jobs/{name}"


def pod_path(namespace: str, name: str) -> str:
    return f"/api/v1/namespaces/{namespace}/pods/{name}"
