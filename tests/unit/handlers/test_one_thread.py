"""All shared state lives on the event loop: handlers are async, and the cache refuses threads."""

import asyncio
import inspect
import threading

import pytest

from tas.cache.state import ClusterState, WrongThread
from tas.runtime.watches import WATCHES
from tas.solver.types import Node


@pytest.mark.parametrize("kind", sorted(WATCHES))
def test_every_watch_handler_is_async(kind: str) -> None:
    handler = WATCHES[kind].handler
    assert inspect.iscoroutinefunction(handler), f"{kind}: {handler.__name__} must be async"


def test_every_kopf_handler_is_async() -> None:
    """kopf runs plain `def` handlers in a thread pool, beside the loop that owns the cache."""
    import kopf

    import tas.handlers.operator  # noqa: F401  (registers the handlers)

    registry = kopf.get_default_registry()
    handlers = []
    for group in (registry._activities, registry._webhooks, registry._indexing):
        handlers.extend(group.get_all_handlers())
    for group in (registry._watching, registry._changing, registry._spawning):
        handlers.extend(group.get_all_handlers())
    ours = [h for h in handlers if h.fn.__module__.startswith("tas.")]  # not kopf's own login
    assert ours, "no handlers registered"
    for handler in ours:
        assert inspect.iscoroutinefunction(handler.fn), f"{handler.id} runs in a thread"
    # And kopf watches nothing itself: our reflectors feed the cache.
    for group in (registry._indexing, registry._watching, registry._changing):
        assert not group.get_all_handlers()


def test_the_cache_refuses_a_mutation_from_another_thread() -> None:
    state = ClusterState()
    state.bind_to_current_thread()
    node = Node(name="n1", labels={}, allocatable={"cpu": 1000})
    errors = []

    def off_loop():
        try:
            state.upsert_node(node)
        except WrongThread as exc:
            errors.append(exc)

    thread = threading.Thread(target=off_loop)
    thread.start()
    thread.join()
    assert errors and "async" in str(errors[0])
    assert "n1" not in state.nodes  # refused before anything changed
    state.upsert_node(node)  # the owning thread may
    assert "n1" in state.nodes


def test_watch_handlers_mutate_on_the_loop_thread() -> None:
    """Run a real handler through asyncio: the bound cache accepts it."""
    from tas.runtime.watches import on_node

    class Rt:
        def __init__(self):
            self.state = ClusterState()
            self.woken = 0
            self.checked = []
            rt = self

            class A:
                def wake(self):
                    rt.woken += 1

            self.admission = A()

        def check_node(self, name):
            self.checked.append(name)

    async def go():
        rt = Rt()
        rt.state.bind_to_current_thread()
        obj = {
            "metadata": {"name": "n1", "labels": {}},
            "status": {
                "allocatable": {"cpu": "1"},
                "conditions": [{"type": "Ready", "status": "True"}],
            },
        }
        await on_node(rt, "ADDED", obj)
        await on_node(rt, "MODIFIED", obj)  # a heartbeat: no wake
        await on_node(rt, "DELETED", {"metadata": {"name": "n1"}})
        return rt

    rt = asyncio.run(go())
    assert rt.woken == 2 and rt.checked == ["n1", "n1"] and not rt.state.nodes
