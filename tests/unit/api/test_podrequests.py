from tas.api.podrequests import pod_requests


def container(requests=None, limits=None, restart_policy=None):
    c = {"name": "c", "resources": {}}
    if requests:
        c["resources"]["requests"] = requests
    if limits:
        c["resources"]["limits"] = limits
    if restart_policy:
        c["restartPolicy"] = restart_policy
    return c


def test_app_containers_add_up():
    spec = {"containers": [container({"cpu": "1", "memory": "1Gi"}), container({"cpu": "500m"})]}
    assert pod_requests(spec) == {"cpu": 1500, "memory": 1024**3 * 1000}


def test_limits_stand_in_for_missing_requests():
    spec = {
        "containers": [container(limits={"cpu": "2", "nvidia.com/gpu": "1"}, requests={"cpu": "1"})]
    }
    assert pod_requests(spec) == {"cpu": 1000, "nvidia.com/gpu": 1000}


def test_a_heavy_init_container_sets_the_peak():
    spec = {
        "initContainers": [container({"cpu": "4"})],
        "containers": [container({"cpu": "1", "memory": "1Mi"})],
    }
    assert pod_requests(spec) == {"cpu": 4000, "memory": 1024**2 * 1000}


def test_sidecars_run_beside_the_app_and_later_init_steps():
    spec = {
        "initContainers": [
            container({"cpu": "1"}, restart_policy="Always"),  # sidecar, keeps running
            container({"cpu": "3"}),  # init step: 3 + the sidecar's 1
        ],
        "containers": [container({"cpu": "2"})],  # app: 2 + the sidecar's 1
    }
    assert pod_requests(spec) == {"cpu": 4000}


def test_overhead_is_added_and_zero_requests_are_dropped():
    spec = {"containers": [container({"cpu": "1", "memory": "0"})], "overhead": {"cpu": "250m"}}
    assert pod_requests(spec) == {"cpu": 1250}
