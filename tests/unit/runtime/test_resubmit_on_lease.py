"""Taking the lease resubmits every owner to its worker: with tens of thousands of them, the
loop that does it lets the lease, the webhooks and the watches run as it goes."""

import asyncio

from tas.config import Settings
from tas.kube import Connection, Kube
from tas.runtime.runtime import Runtime

JOBS = 100_000


def test_resubmitting_many_owners_lets_other_tasks_run():
    async def go():
        kube = Kube(Connection(server="http://127.0.0.1:9", ssl=False))
        rt = Runtime(Settings(leader_elect=False), kube=kube)
        for i in range(JOBS):
            rt.generic_jobs["jobs"].reconciler.objects[("ns", f"job-{i}")] = {}
        ticks = 0
        submitted_at: list[int] = []
        rt.generic_jobs["jobs"].worker.submit = lambda key: submitted_at.append(ticks)
        resubmitting = asyncio.create_task(rt._resubmit_all())
        while not resubmitting.done():
            ticks += 1
            await asyncio.sleep(0)
        await resubmitting
        await kube.close()
        return submitted_at

    submitted_at = asyncio.run(go())
    assert len(submitted_at) == JOBS
    assert submitted_at[-1] - submitted_at[0] >= 2  # the other task ran in between
