"""The defragmentation annotations: tas-operator.io/movable and movable-after."""

from __future__ import annotations

import pytest

from tas.api.movable import Movable, MovableError, effective, parse


@pytest.mark.parametrize(
    ("annotations", "expected"),
    [
        pytest.param({}, Movable(None, None), id="none"),
        pytest.param({"tas-operator.io/movable": "true"}, Movable(True, None), id="true"),
        pytest.param({"tas-operator.io/movable": "false"}, Movable(False, None), id="false"),
        pytest.param({"tas-operator.io/movable-after": "0"}, Movable(None, 0.0), id="zero"),
        pytest.param({"tas-operator.io/movable-after": "90s"}, Movable(None, 90.0), id="90s"),
        pytest.param({"tas-operator.io/movable-after": "1h30m"}, Movable(None, 5400.0), id="1h30m"),
        pytest.param({"tas-operator.io/movable-after": "1.5m"}, Movable(None, 90.0), id="1.5m"),
        pytest.param({"tas-operator.io/movable-after": "500ms"}, Movable(None, 0.5), id="ms"),
    ],
)
def test_parse(annotations: dict, expected: Movable) -> None:
    assert parse(annotations) == expected


@pytest.mark.parametrize(
    ("annotations", "named"),
    [
        pytest.param({"tas-operator.io/movable": "True"}, "tas-operator.io/movable", id="True"),
        pytest.param({"tas-operator.io/movable": ""}, "tas-operator.io/movable", id="empty"),
        pytest.param({"tas-operator.io/movable-after": "5"}, "movable-after", id="no-unit"),
        pytest.param({"tas-operator.io/movable-after": "-5m"}, "movable-after", id="negative"),
        pytest.param({"tas-operator.io/movable-after": "5m "}, "movable-after", id="space"),
        pytest.param({"tas-operator.io/movable-after": "200h"}, "movable-after", id="too-long"),
    ],
)
def test_bad_values_name_the_annotation(annotations: dict, named: str) -> None:
    with pytest.raises(MovableError) as error:
        parse(annotations)
    assert named in str(error.value)


@pytest.mark.parametrize(
    ("own", "default", "expected"),
    [
        pytest.param(Movable(None, None), None, (False, 300.0), id="nothing"),
        pytest.param(Movable(None, None), Movable(True, 60.0), (True, 60.0), id="queue"),
        pytest.param(Movable(False, None), Movable(True, 60.0), (False, 60.0), id="own-wins"),
        pytest.param(Movable(True, 5.0), Movable(False, 60.0), (True, 5.0), id="own-after"),
    ],
)
def test_own_annotations_then_the_queue_default(own, default, expected) -> None:
    assert effective(own, default) == expected
