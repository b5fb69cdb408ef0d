"""The checker accepts the statement's worked example and rejects each broken rule by name."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tas.offline.contest.checker import CheckResult, check, main

EXAMPLE_INPUT = """\
2 2 2 2 2
8 16
4
1 1 1
1 4 2
2 4 8
2 8 16
1
1 9 0
2
8 4 1
1 2 3 4 5 6 7 8
1
2 6 2
2
5 3 2
9 10 11 12 13
1
3 2 0
2
4 4 3
14 15 16 17
3
1 13
2
2 2 2
18 19
1
4 1 0
2
3 3 4
20 21 22
4
"""

EXAMPLE_OUTPUT = """\
1 1 1 1 1 2 0
1 1 1 2 1 2 0
1 1 2 1 1 2 0
1 1 2 2 1 2 0
1 2 1 1 1 2 0
1 2 1 2 1 2 0
1 2 2 1 1 2 0
1 2 2 2 1 2 0
2 1 1 1 1 2 1
2 1 2 1 1 2 2
2 1 1 2 1 2 1
2 1 2 2 1 2 2
2 1 1 1 1 2 1
2 2 1 1 1 2 0
2 2 1 2 1 2 0
2 2 2 1 1 2 0
2 2 2 2 1 2 0
2 1 1 1 1 1
2 1 2 2 1 2
-1
"""

# A pool of 2 network domains x 4 pods x 2 racks x 4 servers (8 servers a pod), nodes of
# 8 CPUs and 16 GB; VM types: 1 = one NUMA node (4, 4), 2 = two nodes (4, 4), 3 = whole server.
TYPES = ("1 4 4", "2 4 4", "2 8 16")


def problem(*requests: str, pool: str = "2 4 2 4 2", caps: str = "8 16", types=TYPES) -> str:
    return "\n".join([pool, caps, str(len(types)), *types, *requests, "4"]) + "\n"


def pg(j: int, t: int, partitions: int = 0) -> str:
    return f"1\n{j} {t} {partitions}"


def create(size: int, f: int, j: int, first: int) -> str:
    return f"2\n{size} {f} {j}\n" + " ".join(str(v) for v in range(first, first + size))


def delete(*vms: int) -> str:
    return f"3\n{len(vms)} " + " ".join(map(str, vms))


def out(*lines: str) -> str:
    return "\n".join(lines) + "\n"


def pod_lines(domain: int, pod: int, numa: str = "1 2") -> list[str]:
    """Whole-server VMs on every server of one pod."""
    return [f"{domain} {pod} {r} {s} {numa} 0" for r in (1, 2) for s in (1, 2, 3, 4)]


def accepted(input_text: str, output_text: str) -> CheckResult:
    result = check(input_text, output_text)
    assert result.ok, result.error
    assert result.error is None
    return result


def rejected(input_text: str, output_text: str, *words: str) -> str:
    result = check(input_text, output_text)
    assert not result.ok and result.score == 0, result
    assert result.error is not None
    for word in words:
        assert word in result.error, result.error
    return result.error


# -- the statement's example ---------------------------------------------------------------


def test_example_scores_19() -> None:
    result = accepted(EXAMPLE_INPUT, EXAMPLE_OUTPUT)
    assert result == CheckResult(True, 19, 4, None, 10, 22)


def test_example_last_request_really_cannot_be_placed() -> None:
    # Group 4 wants three 2-node VMs in one rack: no rack has room; piling them on the one
    # server with room overflows it.
    output = EXAMPLE_OUTPUT.replace("-1\n", "2 1 1 2 1 2 0\n" * 3)
    rejected(EXAMPLE_INPUT, output, "request 10, VM 21", "over capacity")


def test_example_with_blank_lines_still_passes() -> None:
    assert accepted(EXAMPLE_INPUT, "\n" + EXAMPLE_OUTPUT.replace("\n", "\n\n")).score == 19


# -- the protocol ----------------------------------------------------------------------------


def test_giving_up_at_once_scores_0() -> None:
    result = accepted(EXAMPLE_INPUT, "-1\n")
    assert (result.score, result.placed_requests, result.gave_up_at) == (0, 0, 2)


def test_everything_placed_scores_every_vm() -> None:
    inp = problem(pg(1, 0), create(2, 1, 1, 1), delete(1), create(1, 2, 1, 3))
    result = accepted(inp, out("1 1 1 1 1 0", "1 1 1 1 2 0", "2 4 2 4 2 1 0"))
    assert (result.score, result.placed_requests, result.gave_up_at) == (3, 2, None)


def test_output_after_giving_up() -> None:
    rejected(EXAMPLE_INPUT, EXAMPLE_OUTPUT + "1 1 1 1 1 0\n", "output after -1", "line 21")


def test_too_few_lines() -> None:
    truncated = "".join(EXAMPLE_OUTPUT.splitlines(keepends=True)[:15])
    rejected(EXAMPLE_INPUT, truncated, "request 6, VM 16", "missing output")
    rejected(EXAMPLE_INPUT, "", "request 2, VM 1", "missing output")


def test_extra_lines_after_the_last_request() -> None:
    inp = problem(pg(1, 0), create(1, 1, 1, 1))
    rejected(inp, out("1 1 1 1 1 0", "1 1 1 1 1 0"), "extra output", "line 2")


def test_partial_placement_before_giving_up() -> None:
    inp = problem(pg(1, 0), create(2, 1, 1, 1))
    rejected(inp, out("1 1 1 1 1 0", "-1"), "request 2", "partial placement")


def test_not_integers() -> None:
    inp = problem(pg(1, 0), create(1, 1, 1, 1))
    rejected(inp, out("1 1 one 1 1 0"), "request 2, VM 1", "not all integers")


def test_index_out_of_range() -> None:
    inp = problem(pg(1, 0), create(1, 1, 1, 1))
    rejected(inp, out("1 1 3 1 1 0"), "request 2, VM 1", "rack index 3 out of range 1..2")
    rejected(inp, out("3 1 1 1 1 0"), "network domain index 3 out of range 1..2")
    rejected(inp, out("1 5 1 1 1 0"), "pod index 5 out of range 1..4")
    rejected(inp, out("1 1 1 0 1 0"), "server index 0 out of range 1..4")


def test_invalid_input_is_reported_as_such() -> None:
    rejected(problem(pg(2, 0)), "", "invalid input", "PG 2 should be 1")
    rejected(problem(pg(1, 0), create(1, 1, 1, 2)), "", "invalid input", "VMs should be 1..1")
    rejected(problem(pg(1, 0), delete(1)), "", "invalid input", "not live")


# -- resources and NUMA nodes --------------------------------------------------------------


def test_over_committed_numa_node_cpu() -> None:
    inp = problem(pg(1, 0), create(3, 1, 1, 1))
    # Two 4-CPU VMs fill node 1 of server 1.1.1.1; the third overflows it.
    error = rejected(inp, out(*["1 1 1 1 1 0"] * 3), "request 2, VM 3", "over capacity")
    assert "NUMA node 1 of server 1.1.1.1" in error and "CPU 12/8" in error
    accepted(inp, out("1 1 1 1 1 0", "1 1 1 1 1 0", "1 1 1 1 2 0"))


def test_over_committed_numa_node_memory() -> None:
    inp = problem(pg(1, 0), create(2, 1, 1, 1), types=("1 1 10",))
    rejected(inp, out("1 1 1 1 2 0", "1 1 1 1 2 0"), "VM 2", "over capacity", "memory 20/16")


def test_over_commit_across_requests_and_groups() -> None:
    inp = problem(pg(1, 0), create(1, 3, 1, 1), pg(2, 4), create(1, 1, 2, 2))
    rejected(inp, out("1 1 1 1 1 2 0", "1 1 1 1 2 0"), "request 4, VM 2", "over capacity")


def test_deletion_releases_resources() -> None:
    inp = problem(pg(1, 0), create(1, 3, 1, 1), delete(1), pg(2, 0), create(1, 3, 2, 2))
    accepted(inp, out("1 1 1 1 1 2 0", "1 1 1 1 2 1 0"))
    no_delete = problem(pg(1, 0), create(1, 3, 1, 1), pg(2, 0), create(1, 3, 2, 2))
    rejected(no_delete, out("1 1 1 1 1 2 0", "1 1 1 1 2 1 0"), "over capacity")


def test_two_numa_vm_on_one_node() -> None:
    inp = problem(pg(1, 0), create(1, 2, 1, 1))
    rejected(inp, out("1 1 1 1 1 1 0"), "request 2, VM 1", "NUMA count", "different NUMA")
    accepted(inp, out("1 1 1 1 2 1 0"))  # either order


def test_vm_across_servers() -> None:
    # The format names one server a VM; a second node elsewhere can only show up as a node
    # index the server does not have, or as more integers than the VM type has nodes.
    inp = problem(pg(1, 0), create(1, 2, 1, 1))
    rejected(inp, out("1 1 1 1 1 3 0"), "VM 1", "NUMA node 3 out of range", "one server")
    rejected(inp, out("1 1 1 1 1 1 1 2 0"), "VM 1", "expected 7 integers", "one server")


def test_numa_count_must_match_the_vm_type() -> None:
    inp = problem(pg(1, 0), create(1, 1, 1, 1))
    rejected(inp, out("1 1 1 1 1 2 0"), "VM 1", "expected 6 integers", "1 NUMA node(s)")
    inp = problem(pg(1, 0), create(1, 2, 1, 1))
    rejected(inp, out("1 1 1 1 1 0"), "VM 1", "expected 7 integers")


# -- placement groups ------------------------------------------------------------------------


def test_rack_affinity() -> None:
    inp = problem(pg(1, 1), create(3, 1, 1, 1))
    accepted(inp, out("1 1 2 1 1 0", "1 1 2 1 1 0", "1 1 2 4 2 0"))
    rejected(inp, out("1 1 2 1 1 0", "1 1 2 2 1 0", "1 1 1 2 1 0"), "VM 3", "rack affinity")


def test_pod_affinity() -> None:
    inp = problem(pg(1, 2), create(8, 3, 1, 1))
    accepted(inp, out(*pod_lines(2, 3)))
    lines = pod_lines(1, 1)
    lines[7] = "1 2 1 1 1 2 0"
    rejected(inp, out(*lines), "VM 8", "pod affinity", "pod 1.1", "pod 1.2")


def test_network_domain_affinity_spans_requests_while_members_live() -> None:
    inp = problem(pg(1, 3), create(2, 1, 1, 1), create(1, 1, 1, 3))
    accepted(inp, out("1 1 1 1 1 0", "1 4 2 4 1 0", "1 2 1 1 1 0"))
    rejected(
        inp,
        out("1 1 1 1 1 0", "1 4 2 4 1 0", "2 1 1 1 1 0"),
        "request 3, VM 3",
        "network-domain affinity",
    )
    # Our reading: once every member is deleted the group may move.
    moved = problem(pg(1, 3), create(2, 1, 1, 1), delete(1, 2), create(1, 1, 1, 3))
    accepted(moved, out("1 1 1 1 1 0", "1 4 2 4 1 0", "2 1 1 1 1 0"))
    half = problem(pg(1, 3), create(2, 1, 1, 1), delete(1), create(1, 1, 1, 3))
    rejected(half, out("1 1 1 1 1 0", "1 4 2 4 1 0", "2 1 1 1 1 0"), "network-domain affinity")


def test_server_anti_affinity() -> None:
    inp = problem(pg(1, 4), create(2, 1, 1, 1))
    accepted(inp, out("1 1 1 1 1 0", "1 1 1 2 1 0"))
    rejected(inp, out("1 1 1 1 1 0", "1 1 1 1 2 0"), "VM 2", "server anti-affinity")
    # Across requests too, and only while the earlier VM lives.
    again = problem(pg(1, 4), create(1, 1, 1, 1), create(1, 1, 1, 2))
    rejected(again, out("1 1 1 1 1 0", "1 1 1 1 2 0"), "request 3, VM 2", "server anti-affinity")
    freed = problem(pg(1, 4), create(1, 1, 1, 1), delete(1), create(1, 1, 1, 2))
    accepted(freed, out("1 1 1 1 1 0", "1 1 1 1 2 0"))


def test_rack_anti_affinity() -> None:
    inp = problem(pg(1, 5), create(2, 1, 1, 1))
    accepted(inp, out("1 1 1 1 1 0", "1 1 2 1 1 0"))
    rejected(inp, out("1 1 1 1 1 0", "1 1 1 2 1 0"), "VM 2", "rack anti-affinity", "rack 1.1.1")


def test_rack_affinity_with_server_anti_affinity() -> None:
    inp = problem(pg(1, 7), create(2, 1, 1, 1))
    accepted(inp, out("1 1 1 1 1 0", "1 1 1 2 1 0"))
    rejected(inp, out("1 1 1 1 1 0", "1 1 1 1 2 0"), "VM 2", "server anti-affinity")
    rejected(inp, out("1 1 1 1 1 0", "1 1 2 2 1 0"), "VM 2", "rack affinity")


def test_network_domain_affinity_with_rack_anti_affinity() -> None:
    inp = problem(pg(1, 8), create(2, 1, 1, 1))
    accepted(inp, out("1 1 1 1 1 0", "1 3 2 1 1 0"))
    rejected(inp, out("1 1 1 1 1 0", "1 1 1 3 1 0"), "VM 2", "rack anti-affinity")
    rejected(inp, out("1 1 1 1 1 0", "2 1 2 1 1 0"), "VM 2", "network-domain affinity")


def test_two_partitions_in_one_rack() -> None:
    inp = problem(pg(1, 6, 2), create(2, 1, 1, 1))
    accepted(inp, out("1 1 1 1 1 1", "1 1 2 1 1 2"))
    rejected(
        inp,
        out("1 1 1 1 1 1", "1 1 1 2 1 2"),
        "VM 2",
        "rack anti-affinity with partitions",
        "rack 1.1.1 already holds partition 1",
    )


def test_a_rack_emptied_of_one_partition_may_take_another() -> None:
    inp = problem(pg(1, 6, 2), create(2, 1, 1, 1), delete(1), create(2, 1, 1, 3))
    # VM 1 (partition 1) leaves rack 1.1.1, and VM 4 of partition 2 moves in.
    accepted(inp, out("1 1 1 1 1 1", "1 1 2 1 1 2", "1 2 1 1 1 1", "1 1 1 1 1 2"))
    kept = problem(pg(1, 6, 2), create(2, 1, 1, 1), create(2, 1, 1, 3))
    rejected(
        kept,
        out("1 1 1 1 1 1", "1 1 2 1 1 2", "1 2 1 1 1 1", "1 1 1 1 1 2"),
        "request 3, VM 4",
        "rack anti-affinity with partitions",
    )


def test_partition_joining_another_partitions_rack() -> None:
    inp = problem(pg(1, 6, 2), create(2, 1, 1, 1), create(2, 1, 1, 3))
    rejected(
        inp,
        out("1 1 1 1 1 1", "1 1 2 1 1 2", "1 1 1 2 1 1", "1 1 2 2 1 1"),
        "request 3, VM 4",
        "rack anti-affinity with partitions",
    )


def test_unbalanced_partitions() -> None:
    inp = problem(pg(1, 6, 2), create(3, 1, 1, 1))
    accepted(inp, out("1 1 1 1 1 1", "1 1 1 1 1 1", "1 1 2 1 1 2"))
    rejected(
        inp,
        out("1 1 1 1 1 1", "1 1 1 1 1 1", "1 1 1 2 1 1"),
        "request 2 (VMs 1..3, group 1)",
        "partitions unbalanced",
        "[3, 0]",
    )
    # One VM in three partitions is balanced: empty partitions count, sizes 1, 0, 0.
    accepted(problem(pg(1, 6, 3), create(1, 1, 1, 1)), out("1 1 1 1 1 3"))


def test_balance_is_checked_after_each_creation_not_after_deletions() -> None:
    inp = problem(pg(1, 6, 2), create(4, 1, 1, 1), delete(1, 2), create(2, 1, 1, 5))
    first = ["1 1 1 1 1 1", "1 1 1 2 1 1", "1 1 2 1 1 2", "1 1 2 2 1 2"]
    accepted(inp, out(*first, "1 1 1 3 1 1", "1 1 1 4 1 1"))  # 0+2 vs 2
    rejected(inp, out(*first, "1 1 1 3 1 1", "1 1 2 3 1 2"), "partitions unbalanced", "[1, 3]")


def test_partition_number_out_of_range() -> None:
    inp = problem(pg(1, 6, 2), create(1, 1, 1, 1))
    rejected(inp, out("1 1 1 1 1 3"), "VM 1", "partition number 3 out of range 1..2")
    rejected(inp, out("1 1 1 1 1 0"), "VM 1", "partition number 0 out of range 1..2")
    plain = problem(pg(1, 5), create(1, 1, 1, 1))
    rejected(plain, out("1 1 1 1 1 1"), "VM 1", "partition number 1: must be 0")


def test_type_2_not_filling_a_whole_pod() -> None:
    inp = problem(pg(1, 2), create(8, 3, 1, 1))
    lines = pod_lines(1, 1)
    lines[7] = lines[6]  # two VMs on server 1.1.2.3, server 1.1.2.4 left out
    rejected(inp, out(*lines), "VM 8", "whole-pod allocation", "server 1.1.2.3 already holds VM 7")


def test_type_9_not_filling_its_pods() -> None:
    inp = problem(pg(1, 9), create(16, 3, 1, 1))
    accepted(inp, out(*pod_lines(1, 1), *pod_lines(1, 3)))
    split = [*pod_lines(1, 1), *pod_lines(1, 2)[:7], "1 3 1 1 1 2 0"]
    rejected(inp, out(*split), "whole-pod allocation", "fills 7 of the 8 servers of pod 1.2")


def test_foreign_vm_inside_a_whole_pod() -> None:
    after = problem(pg(1, 9), create(8, 3, 1, 1), pg(2, 0), create(1, 1, 2, 9))
    rejected(
        after,
        out(*pod_lines(1, 1), "1 1 2 2 1 0"),
        "request 4, VM 9",
        "whole-pod allocation",
        "server 1.1.2.2 already holds VM 6 of group 1",
    )
    before = problem(pg(1, 0), create(1, 1, 1, 1), pg(2, 2), create(8, 3, 2, 2))
    rejected(
        before,
        out("1 1 2 2 1 0", *pod_lines(1, 1)),
        "request 4, VM 7",
        "whole-pod allocation",
        "server 1.1.2.2 already holds VM 1",
    )


def test_a_freed_server_of_a_whole_pod_is_free_to_anyone() -> None:
    inp = problem(pg(1, 9), create(8, 3, 1, 1), delete(6), pg(2, 0), create(2, 1, 2, 9))
    accepted(inp, out(*pod_lines(1, 1), "1 1 2 2 1 0", "1 1 2 2 2 0"))


def test_type_9_pods_in_two_network_domains() -> None:
    two_requests = problem(pg(1, 9), create(8, 3, 1, 1), create(8, 3, 1, 9))
    accepted(two_requests, out(*pod_lines(2, 1), *pod_lines(2, 4)))
    rejected(
        two_requests,
        out(*pod_lines(1, 1), *pod_lines(2, 1)),
        "request 3, VM 9",
        "network-domain affinity",
    )
    one_request = problem(pg(1, 9), create(16, 3, 1, 1))
    rejected(
        one_request, out(*pod_lines(1, 1), *pod_lines(2, 1)), "VM 9", "network-domain affinity"
    )


# -- robustness and the command line ---------------------------------------------------------


@settings(max_examples=200, deadline=None)
@given(
    line=st.integers(0, 19),
    column=st.integers(0, 6),
    value=st.integers(-2, 4),
)
def test_any_one_number_changed_in_the_example_is_judged_without_crashing(
    line: int, column: int, value: int
) -> None:
    lines = EXAMPLE_OUTPUT.splitlines()
    tokens = lines[line].split()
    if column >= len(tokens):
        return
    tokens[column] = str(value)
    lines[line] = " ".join(tokens)
    result = check(EXAMPLE_INPUT, out(*lines))
    assert result.ok == (result.error is None)
    assert result.score in (0, 19)


def test_main(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    inp, good, bad = tmp_path / "in.txt", tmp_path / "good.txt", tmp_path / "bad.txt"
    inp.write_text(EXAMPLE_INPUT)
    good.write_text(EXAMPLE_OUTPUT)
    bad.write_text(EXAMPLE_OUTPUT + "1 1 1 1 1 0\n")
    assert main([str(inp), str(good)]) == 0
    assert json.loads(capsys.readouterr().out) == {
        "ok": True,
        "score": 19,
        "placed_requests": 4,
        "error": None,
        "gave_up_at": 10,
        "total_vms": 22,
    }
    assert main([str(inp), str(bad)]) == 1
    verdict = json.loads(capsys.readouterr().out)
    assert not verdict["ok"] and verdict["score"] == 0 and "output after -1" in verdict["error"]
