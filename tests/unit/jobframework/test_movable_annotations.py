"""Gate TASDefragmentation: a Job's tas-operator.io/movable annotations reach its Workload,
and a bad value is refused by the Job's webhook, naming it; gate off, neither."""

from __future__ import annotations

import pytest

from tas import features
from tas.integrations.job.controller import JOB
from tas.jobframework.webhook import validate
from tas.jobframework.workload import build_workload
from tests.unit.jobframework.test_priority import job

ON = features.from_mapping({"TASDefragmentation": True})
OFF = features.defaults()


def annotated(annotations: dict) -> dict:
    obj = job()
    obj["metadata"]["annotations"] = {"other": "x", **annotations}
    return obj


@pytest.mark.parametrize(
    ("gates", "expected"),
    [
        pytest.param(ON, {"tas-operator.io/movable": "true"}, id="on"),
        pytest.param(OFF, None, id="off"),
    ],
)
def test_the_workload_carries_the_movable_annotations(gates, expected) -> None:
    with features.activated(gates):
        wl = build_workload(JOB, annotated({"tas-operator.io/movable": "true"}))
    assert wl["metadata"].get("annotations") == expected


@pytest.mark.parametrize(
    ("gates", "annotations", "refused"),
    [
        pytest.param(ON, {"tas-operator.io/movable": "yes"}, "tas-operator.io/movable]", id="bool"),
        pytest.param(
            ON, {"tas-operator.io/movable-after": "soon"}, "movable-after]", id="duration"
        ),
        pytest.param(ON, {"tas-operator.io/movable-after": "10m"}, None, id="good"),
        pytest.param(OFF, {"tas-operator.io/movable": "yes"}, None, id="gate-off"),
    ],
)
def test_the_webhook_refuses_a_bad_value_naming_it(gates, annotations, refused) -> None:
    with features.activated(gates):
        errors = validate(JOB, annotated(annotations))
    if refused is None:
        assert errors == []
    else:
        assert len(errors) == 1 and refused in errors[0]
