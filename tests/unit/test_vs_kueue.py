"""The side-by-side bench's pure parts: its fixed Job sequence, the comparison, the table, and
how Kueue's shipped manifests are pointed at 127.0.0.1 (only where e2e/build-kueue.sh has
cached Kueue's module: the bench builds it, unit tests never do)."""

from __future__ import annotations

from bench import vs_kueue
from e2e import jobs, topology
from e2e.harness import Cluster


def test_the_placement_sequence_is_the_same_every_time():
    a, b = vs_kueue.placement_sequence(200), vs_kueue.placement_sequence(200)
    assert a == b
    created: list[str] = []
    finished: list[str] = []
    for step, arg in a:
        if step == "job":
            created.append(arg[0])
        else:  # a Job finishes only after it was created, and only once
            assert arg in created and arg not in finished
            finished.append(arg)
    assert len(created) == 200 == len(set(created)) and len(finished) > 40


def test_the_sequence_mixes_every_kind_and_slices_divide_their_counts():
    kinds = {}
    for step, arg in vs_kueue.placement_sequence(200):
        if step == "job":
            name, kind, body = arg
            kinds[kind] = kinds.get(kind, 0) + 1
            notes = body["spec"]["template"]["metadata"]["annotations"]
            size = notes.get(jobs.PREFIX + "podset-slice-size")
            if size:
                assert body["spec"]["parallelism"] % int(size) == 0, name
    assert len(kinds) == 10 and min(kinds.values()) >= 10


def test_placement_nodes_and_usage_are_seeded_and_fit_their_nodes():
    shape = topology.Shape(blocks=4, racks=8, hosts=8)
    nodes = vs_kueue.placement_nodes(shape)
    assert nodes == vs_kueue.placement_nodes(shape) and len(nodes) == 256
    cpu = {n["metadata"]["name"]: int(n["status"]["allocatable"]["cpu"]) for n in nodes}
    assert set(cpu.values()) == {4, 8, 16}
    for pod in vs_kueue.placement_usage(nodes):
        requested = int(pod["spec"]["containers"][0]["resources"]["requests"]["cpu"])
        assert requested < cpu[pod["spec"]["nodeName"]]


def test_a_known_kueue_bug_is_named_and_anything_else_is_not_explained():
    diff = {
        "job": "j1",
        "kind": "unconstrained",
        vs_kueue.OURS: {"admitted": True, "assignment": []},
        vs_kueue.KUEUE: {
            "admitted": False,
            "message": 'couldn\'t assign flavors to pod set main: topology "placement" '
            "doesn't allow to fit any of 27 pod(s)",
        },
    }
    assert "kueue#8157" in vs_kueue.explain(diff)
    assert vs_kueue.explain({**diff, "kind": "required-rack"}) == "unexplained"
    ta = {"levels": ["kubernetes.io/hostname"], "domains": [{"values": ["a"], "count": 2}]}
    assert vs_kueue.same_outcome(
        {"admitted": True, "assignment": [ta]},
        {"admitted": True, "assignment": [ta], "finished_later": True},
    )
    assert not vs_kueue.same_outcome(
        {"admitted": True, "assignment": [ta]}, {"admitted": False, "message": "x"}
    )


def test_the_table_has_both_columns_and_the_ratio():
    results = {
        vs_kueue.OURS: {"version": "0.1.0", "stages": {"job64": {"median_all_running_s": 1.0}}},
        vs_kueue.KUEUE: {"version": "v0.15.0", "stages": {"job64": {"median_all_running_s": 2.0}}},
        "placement": {"jobs": 200, "nodes": 256, "identical": 200},
    }
    text = vs_kueue.table(results)
    assert "| measure | tas-operator 0.1.0 | Kueue v0.15.0 | ours / Kueue |" in text
    assert "| 64-pod Job: create -> all pods Running (median) | 1.00 s | 2.00 s | 0.50 |" in text
    assert "200 of 200 identical" in text


def test_kueue_manifests_point_at_127_0_0_1():
    """Kueue's own manifests (fetched from the Go module proxy, no build) as the bench
    rewrites them."""
    from e2e.kueue_process import KueueProcess

    kueue = KueueProcess(Cluster("/nonexistent", None, None), config_only=True)
    try:
        url = f"https://127.0.0.1:{kueue.port}/"
        converted = [c for c in kueue.crds() if c["spec"].get("conversion")]
        assert {c["metadata"]["name"] for c in converted} >= {"workloads.kueue.x-k8s.io"}
        for crd in converted:
            client = crd["spec"]["conversion"]["webhook"]["clientConfig"]
            assert client["url"] == url + "convert" and client["caBundle"]
        for conf in kueue.webhook_configurations():
            for hook in conf["webhooks"]:
                assert hook["clientConfig"]["url"].startswith(url)
                assert "service" not in hook["clientConfig"]
        cfg = kueue.configuration()
        assert cfg["apiVersion"] == "config.kueue.x-k8s.io/v1beta2"
        assert cfg["internalCertManagement"] == {"enable": False}
        assert cfg["featureGates"]["VisibilityOnDemand"] is False
        assert cfg["integrations"] == {"frameworks": ["batch/job"]}
        assert cfg["webhook"]["port"] == kueue.port
    finally:
        kueue.cleanup()


def test_a_controllers_requests_are_counted_from_the_audit_log():
    """Only the controller's user agents, only inside the window; reads are not writes."""
    import json as _json

    from bench.vs_kueue import count_requests

    def event(agent: str, verb: str, at: str) -> str:
        return _json.dumps({"userAgent": agent, "verb": verb, "requestReceivedTimestamp": at})

    lines = [
        event("kueue/v0.17.0 (linux/amd64) kubernetes/abc", "patch", "2026-11-28T08:00:01.5Z"),
        event("kueue/v0.17.0 (linux/amd64) kubernetes/abc", "list", "2026-11-28T08:00:02.000001Z"),
        event("kubectl/v1.36.3 (linux/amd64)", "create", "2026-11-28T08:00:02Z"),
        event("tas-operator", "update", "2026-11-28T08:00:03Z"),
        event("kopf/1.38", "watch", "2026-11-28T08:00:03Z"),
        event("kueue/v0.17.0", "update", "2026-11-28T09:00:00Z"),  # after the window
    ]
    import datetime as _dt

    start = _dt.datetime(2026, 11, 28, 8, 0, 0, tzinfo=_dt.UTC).timestamp()
    window = (start, start + 60)
    assert count_requests(lines, ("kueue/",), *window) == {"all": 2, "writes": 1}
    assert count_requests(lines, ("tas-operator", "kopf"), *window) == {"all": 2, "writes": 1}


def test_a_half_written_audit_line_waits_for_the_next_read(tmp_path):
    """The API server appends while the bench reads: only whole lines are taken, and the next
    read starts where the last whole line ended."""
    from bench.vs_kueue import whole_lines

    log = tmp_path / "audit.log"
    log.write_bytes(b'{"a": 1}\n{"b": ')
    lines, offset = whole_lines(log)
    assert lines == ['{"a": 1}']
    with log.open("ab") as f:
        f.write(b'2}\n{"c": 3}\n')
    assert whole_lines(log, offset) == (['{"b": 2}', '{"c": 3}'], log.stat().st_size)


def test_the_job_webhooks_slowest_review_is_read_from_the_api_servers_histogram():
    """Per webhook name, from two scrapes of the API server's histogram; the row takes the
    slowest of the webhooks that reviewed the Jobs, not a Pod webhook."""
    from bench.vs_kueue import job_reviews
    from bench.webhook_latency_bench import review_latency

    inf = float("inf")
    before = {"vjob.kb.io": {0.005: 10.0, 0.025: 10.0, inf: 10.0}}
    after = {
        "mjob.kb.io": {0.005: 99.0, 0.025: 100.0, inf: 100.0},
        "vjob.kb.io": {0.005: 10.0, 0.025: 60.0, 0.1: 110.0, inf: 110.0},
        "mpod.kb.io": {0.005: 0.0, 0.5: 0.0, 1.0: 200.0, inf: 200.0},
    }
    rows = job_reviews(review_latency(before, after))
    assert 25 < rows["job_webhook_ms_p99"] <= 100  # vjob's: its slowest reviews took 25-100 ms
    assert rows["job_webhook_ms_p50"] <= 25
    assert job_reviews(review_latency(after, after)) == {}


def test_a_rotated_audit_log_is_read_from_the_start_and_with_the_files_rotated_out(tmp_path):
    """The API server renames its log every 100 MB and starts a new one: the offset of the
    old file points past the new one's end, and the window's requests span both files."""
    import os as _os
    import types

    from bench.vs_kueue import audit_logs, whole_lines

    old = tmp_path / "audit-2026-11-28T11-18-27.344.log"
    old.write_bytes(b'{"n": 1}\n')
    stale = tmp_path / "audit-2026-11-28T09-00-00.000.log"
    stale.write_bytes(b'{"n": 0}\n')
    _os.utime(stale, (1000.0, 1000.0))
    log = tmp_path / "audit.log"
    log.write_bytes(b'{"n": 2}\n')
    cluster = types.SimpleNamespace(local_dir=str(tmp_path))
    assert audit_logs(cluster, since=2000.0) == [old, log]
    assert whole_lines(log, offset=10_000) == (['{"n": 2}'], 9)
