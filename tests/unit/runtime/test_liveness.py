"""A watch or worker task that ends (it never should) makes the liveness probe fail."""

import asyncio

from tests.unit.runtime.offline import offline_runtime as runtime


def test_a_dead_worker_is_a_liveness_problem_and_a_cancelled_one_is_not() -> None:
    async def go():
        rt = runtime()

        async def crash():
            raise RuntimeError("worker bug")

        async def forever():
            await asyncio.sleep(3600)

        rt.tasks = [
            asyncio.create_task(crash(), name="ungater"),
            asyncio.create_task(forever(), name="admission"),
            asyncio.create_task(forever(), name="jobs"),
        ]
        await asyncio.sleep(0.01)
        while_running = rt.problems()
        rt.tasks[2].cancel()  # shutdown cancels tasks: not a problem
        await asyncio.sleep(0.01)
        problems = rt.problems()
        for t in rt.tasks:
            t.cancel()
        await asyncio.gather(*rt.tasks, return_exceptions=True)
        await rt.kube.close()
        return while_running, problems

    while_running, after_cancel = asyncio.run(go())
    assert while_running == after_cancel == ["ungater stopped: RuntimeError('worker bug')"]


def test_a_failed_start_up_is_a_liveness_problem_and_a_finished_one_is_not() -> None:
    """`activate` ends by itself once admission has started; failing, it would leave
    admission never started in a process that looks alive."""

    async def problems_after(activate) -> list[str]:
        rt = runtime()
        rt.tasks = [asyncio.create_task(activate(), name="activate")]
        await asyncio.gather(*rt.tasks, return_exceptions=True)
        await rt.kube.close()
        return rt.problems()

    async def fails():
        raise KeyError("a bug in start-up")

    async def finishes():
        return None

    assert asyncio.run(problems_after(fails)) == ["activate stopped: KeyError('a bug in start-up')"]
    assert asyncio.run(problems_after(finishes)) == []


def test_the_runtime_watches_every_kind_and_binds_the_cache_to_its_thread() -> None:
    async def go():
        rt = runtime()
        await rt.kube.close()
        return rt

    rt = asyncio.run(go())
    assert {r.name for r in rt.reflectors} == {
        "namespaces",
        "nodes",
        "pods",
        "topologies",
        "resourceflavors",
        "clusterqueues",
        "localqueues",
        "workloads",
        "workloadpriorityclasses",
        "cohorts",
        "priorityclasses",
        "limitranges",
        "runtimeclasses",
        "jobs",
    }
    assert rt.state._owner is not None
