"""The view model survives JSON (what `tas top` reads from `tas view`), and bad data is named."""

import json
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tas.view import codec
from tas.view import model as m

names = st.text("abcxyz-/", min_size=1, max_size=8)
amounts = st.dictionaries(st.sampled_from(["cpu", "memory", "pods"]), st.integers(0, 10**9))
uses = st.builds(m.Use, st.none() | names, amounts, st.integers(0, 100))
hosts = st.builds(
    m.HostView,
    names,
    amounts,
    st.lists(uses, max_size=3).map(tuple),
    amounts,
    st.lists(st.sampled_from([m.CORDONED, m.NOT_READY, m.TAINTED]), max_size=2).map(tuple),
)
domains = st.builds(
    m.DomainView, names, names, amounts, amounts, hosts=st.lists(hosts, max_size=3).map(tuple)
)
flavors = st.builds(
    m.FlavorView,
    names,
    names,
    st.lists(names, max_size=3).map(tuple),
    st.lists(domains, max_size=3).map(tuple),
)
workloads = st.builds(
    m.WorkloadView,
    names,
    names,
    names,
    st.integers(0, 10**4),
    st.booleans(),
    names,
    names,
    st.lists(names, max_size=3).map(tuple),
)
views = st.builds(
    m.ClusterView,
    st.lists(flavors, max_size=2).map(tuple),
    st.lists(workloads, max_size=4).map(tuple),
    st.lists(
        st.builds(m.PlacementGroupView, names, names, st.lists(names, max_size=2).map(tuple)),
        max_size=2,
    ).map(tuple),
    st.lists(st.builds(m.ReplacementView, names, names, names, st.floats(0, 1e10)), max_size=2).map(
        tuple
    ),
    st.floats(0, 1e10),
    st.dictionaries(names, names, max_size=2),
)


@settings(max_examples=60, deadline=None)
@given(views)
def test_round_trip_through_json(view):
    assert codec.from_data(json.loads(json.dumps(codec.to_data(view)))) == view


@pytest.mark.parametrize(
    ("data", "named"),
    [
        ({"flavors": [{"name": 1}], "workloads": []}, "view.flavors[0].name"),
        ({"flavors": {}, "workloads": []}, "view.flavors"),
        (
            {
                "flavors": [],
                "workloads": [
                    {"key": "a", "queue": "q", "cluster_queue": "c", "pods": True, "admitted": True}
                ],
            },
            "view.workloads[0].pods",
        ),
        ({"flavors": []}, "view"),  # workloads missing
        ([], "view"),
    ],
    ids=["str-field", "list-field", "bool-is-not-int", "missing-field", "not-an-object"],
)
def test_bad_data_names_the_field(data, named):
    with pytest.raises(ValueError, match="^" + re.escape(named) + ":"):
        codec.from_data(data)
