"""After a restart the Job webhooks come up before anything that no webhook needs is loaded:
admitted Jobs start through them, and an import in a thread still holds the interpreter lock."""

from __future__ import annotations

import asyncio
import subprocess
import sys

from tas.kube import KubeError
from tas.kube.retry import Backoff
from tas.runtime import runtime as runtime_module
from tas.runtime.serial import SerialWorker
from tests.unit.runtime.offline import offline_runtime as runtime


def test_past_webhooks_waits_until_the_refused_writes_went_again(monkeypatch) -> None:
    """Serving is not enough: the writes our webhooks refused before (a Job's start) are
    retried at once, and what waits in past_webhooks goes on only once they are through."""

    async def go() -> tuple[list[str], bool, bool]:
        rt = runtime()
        calls: list[str] = []
        gate = asyncio.Event()

        async def handle(key: str) -> None:
            calls.append(key)
            if len(calls) == 1:
                raise KubeError(500, "failed calling webhook: connection refused")
            await gate.wait()  # the retried write, in flight

        async def first_admissions_past() -> None:
            return None

        worker = SerialWorker("jobs", handle, backoff=Backoff(base=60.0, cap=60.0))
        worker.started.set()
        monkeypatch.setattr(rt, "workers", lambda: [worker])
        monkeypatch.setattr(rt, "past_first_admissions", first_admissions_past)
        running = asyncio.create_task(worker.run())
        worker.submit("job")
        waiting = asyncio.create_task(rt.past_webhooks())
        await asyncio.sleep(0.05)  # refused: in a 30-60 s backoff
        served = asyncio.create_task(rt.webhooks_served())
        await asyncio.sleep(0.05)
        while_in_flight = waiting.done()
        gate.set()
        await asyncio.wait_for(asyncio.gather(served, waiting), 5)
        running.cancel()
        await rt.kube.close()
        return calls, while_in_flight, waiting.done()

    calls, while_in_flight, done = asyncio.run(go())
    assert calls == ["job", "job"]  # retried at once, not after its backoff
    assert (while_in_flight, done) == (False, True)


def test_past_webhooks_gives_up_waiting_after_its_bound(monkeypatch) -> None:
    """A replica whose webhooks never serve (its port taken) still migrates storage."""
    monkeypatch.setattr(runtime_module, "WEBHOOKS_WAIT_S", 0.05)

    async def go() -> None:
        rt = runtime()

        async def first_admissions_past() -> None:
            return None

        monkeypatch.setattr(rt, "past_first_admissions", first_admissions_past)
        await asyncio.wait_for(rt.past_webhooks(), 2)
        await rt.kube.close()

    asyncio.run(go())


def test_the_webhook_wiring_loads_no_crd_models() -> None:
    """Building the pydantic models costs several times the rest of the wiring's import."""
    code = (
        "import sys, tas.handlers.operator; "
        "print(sorted(m for m in sys.modules if m.startswith(('pydantic', 'tas.api.models'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
