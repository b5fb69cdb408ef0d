"""A pod set's `topologyAssignment` in Kueue's JSON shapes, to and from the solver's.

Kept beside topologyrequest.py: the request goes into the Workload's spec, the assignment comes
back in its status; both conversions of each live in one place.

v1beta1: `{levels, domains: [{values, count}]}`. v1beta2 (Kueue's stored version since v0.16):
`{levels, slices: [{domainCount, valuesPerLevel: [{universal | individual: {prefix, suffix,
roots}}], podCounts: {universal | individual}}]}`; the domains are the slices' in order, value
`prefix + roots[i] + suffix` (or `universal`), count `individual[i]` (or `universal`).

The encoder is Kueue's `V1Beta2From` (pkg/util/tas/tas_assignment.go, v0.19 and main) slice for
slice. One difference: Go cuts prefixes and suffixes at bytes, we at characters; they differ only
for non-ASCII values, which a label value cannot hold. The decoder reads every form the v1beta2
schema allows and refuses anything else with a TopologyAssignmentError naming the field.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from itertools import chain

from tas import features
from tas.features import Gate
from tas.solver.types import HOSTNAME_LEVEL, DomainAssignment, TopologyAssignment

# The v1beta2 schema's limits (apis/kueue/v1beta2/workload_types.go).
MAX_LEVELS = 16
MAX_LEVEL_LENGTH = 317
MAX_SLICES = 1_000
MAX_DOMAINS_PER_SLICE = 100_000  # MaxItems of roots and of individual pod counts
MAX_VALUE_LENGTH = 63  # universal, prefix, suffix and each root
# A slice whose values and pod count are all universal repeats one domain domainCount times
# (Kueue writes one only for a v1beta1 list that repeats a domain). The schema bounds nothing
# there, so we cap all such repeats together: a small object must not expand to millions.
MAX_REPEATED_DOMAINS = 100_000
_INT32_MAX = 2**31 - 1

Rows = list[tuple[str, ...]]  # one tuple of values (one per level) per domain


class TopologyAssignmentError(ValueError):
    """A topologyAssignment Kueue's schema would refuse; `field` is its path in the object."""

    def __init__(self, field: str, problem: str) -> None:
        self.field = field
        self.problem = problem
        super().__init__(f"{field}: {problem}")


# --- v1beta1 -----------------------------------------------------------------------------------


def to_api(assignment: TopologyAssignment, *, sort_by_values: bool = False) -> dict:
    """Kueue's order (the solver's, by full topology path) unless `sort_by_values`, which the
    `tas solve` contract promises."""
    domains = assignment.domains
    if sort_by_values:
        domains = tuple(sorted(domains, key=lambda domain: domain.values))
    return {
        "levels": list(assignment.levels),
        "domains": [{"values": list(d.values), "count": d.count} for d in domains],
    }


def from_api(api: Mapping | None) -> TopologyAssignment | None:
    if not api:
        return None
    return TopologyAssignment(
        levels=tuple(api.get("levels") or ()),
        domains=tuple(
            DomainAssignment(values=tuple(d.get("values") or ()), count=int(d.get("count", 0)))
            for d in api.get("domains") or []
        ),
    )


# --- v1beta2 -----------------------------------------------------------------------------------


def to_stored(assignment: TopologyAssignment) -> dict:
    """The assignment as the operator writes it: v1beta2, cut into hostname-prefix runs while
    TASAssignmentsEncodingByHostnamePrefix is on (one slice otherwise)."""
    return to_v1beta2(assignment, by_hostname_prefix=_by_hostname_prefix())


def v1beta1_to_stored(ta: Mapping) -> dict:
    """A v1beta1 assignment as the conversion webhook stores it (encoded as `to_stored`)."""
    return v1beta1_to_v1beta2(ta, by_hostname_prefix=_by_hostname_prefix())


def _by_hostname_prefix() -> bool:
    return features.enabled(Gate.TAS_ASSIGNMENTS_ENCODING_BY_HOSTNAME_PREFIX)


def to_v1beta2(assignment: TopologyAssignment, *, by_hostname_prefix: bool = True) -> dict:
    """The slices Kueue's V1Beta2From writes; `by_hostname_prefix` is the gate
    TASAssignmentsEncodingByHostnamePrefix (on by default since Kueue v0.19; off, the one slice
    of Kueue v0.16 to v0.18)."""
    return v1beta1_to_v1beta2(to_api(assignment), by_hostname_prefix=by_hostname_prefix)


def from_v1beta2(api: Mapping | None) -> TopologyAssignment | None:
    """Any valid v1beta2 form back to the solver's assignment, domains in slice order."""
    if api is None:
        return None
    return from_api(v1beta2_to_v1beta1(api))


def v1beta1_to_v1beta2(ta: Mapping, *, by_hostname_prefix: bool = True) -> dict:
    """Kueue's conversion of a v1beta1 topologyAssignment (the webhook's, dict to dict)."""
    levels, rows, counts = _read_v1beta1(ta)
    if not by_hostname_prefix:
        return _single_slice_encoding(levels, rows, counts)
    by_prefix = _prefix_runs_encoding(levels, rows, counts)
    if len(by_prefix["slices"]) <= 1 or len(rows) > MAX_DOMAINS_PER_SLICE:
        return by_prefix
    single = _single_slice_encoding(levels, rows, counts)
    # Kueue keeps the single slice only when its JSON is strictly shorter.
    return single if _go_json_size(single) < _go_json_size(by_prefix) else by_prefix


def v1beta2_to_v1beta1(ta: Mapping) -> dict:
    """Kueue's conversion back: the slices' domains in order, the exact inverse of the above."""
    levels, rows, counts = _read_v1beta2(ta)
    return {
        "levels": levels,
        "domains": [{"values": list(row), "count": n} for row, n in zip(rows, counts, strict=True)],
    }


def hostname_prefix_runs(ta: Mapping) -> dict:
    """Kueue's compactTopologyAssignmentEncodingWithHostnamePrefixRuns: the gate's encoding
    before V1Beta2From weighs it against a single slice (for tests and comparisons)."""
    return _prefix_runs_encoding(*_read_v1beta1(ta))


# --- encoding ----------------------------------------------------------------------------------


def _single_slice_encoding(levels: list[str], rows: Rows, counts: list[int]) -> dict:
    """No slice for no domains, else every domain in one slice (the gate off). Kueue writes
    the slice even past the schema's limit, for the API server to refuse: we refuse here."""
    if len(rows) > MAX_DOMAINS_PER_SLICE:
        raise TopologyAssignmentError(
            "domains",
            f"{len(rows)} domains; one slice holds at most {MAX_DOMAINS_PER_SLICE} "
            "(more need the hostname-prefix encoding)",
        )
    return {"levels": levels, "slices": [_slice(rows, counts)] if rows else []}


def _prefix_runs_encoding(levels: list[str], rows: Rows, counts: list[int]) -> dict:
    """Consecutive domains whose hostnames share a key prefix form a slice (never reordered),
    cut into chunks of at most MAX_DOMAINS_PER_SLICE."""
    keys = None
    if len(rows) > 1 and levels[-1] == HOSTNAME_LEVEL:
        keys = _prefix_keys([row[-1] for row in rows])
    slices = []
    for start, end in _runs(keys, len(rows)):
        for chunk in range(start, end, MAX_DOMAINS_PER_SLICE):
            stop = min(chunk + MAX_DOMAINS_PER_SLICE, end)
            slices.append(_slice(rows[chunk:stop], counts[chunk:stop]))
    return {"levels": levels, "slices": slices}


def _prefix_keys(hostnames: list[str]) -> list[str] | None:
    """Each hostname's key: its longest prefix ending at "-" that two domains share, trying
    fewer "-" (a coarser grouping) while the runs need more than MAX_SLICES slices. None when
    no depth fits or no hostname has a "-" before its last character."""
    candidates = [_dash_prefixes(hostname) for hostname in hostnames]
    seen = Counter(chain.from_iterable(candidates))
    by_depth = [_key_by_depth(prefixes, seen) for prefixes in candidates]
    for depth in range(max(map(len, candidates)), 0, -1):
        keys = [keys[min(depth, len(keys)) - 1] if keys else "" for keys in by_depth]
        runs = _runs(keys, len(keys))
        if sum(-(-(end - start) // MAX_DOMAINS_PER_SLICE) for start, end in runs) <= MAX_SLICES:
            return keys
    return None


def _dash_prefixes(hostname: str) -> list[str]:
    """The prefixes of `hostname` that end at a "-" other than its last character."""
    prefixes = []
    end = hostname.find("-")
    while end != -1 and end + 1 < len(hostname):
        prefixes.append(hostname[: end + 1])
        end = hostname.find("-", end + 1)
    return prefixes


def _key_by_depth(prefixes: list[str], seen: Counter[str]) -> list[str]:
    """At depth d (index d-1): the longest of the first d prefixes that another domain shares,
    or "" when none does."""
    keys, key = [], ""
    for prefix in prefixes:
        if seen[prefix] >= 2:
            key = prefix
        keys.append(key)
    return keys


def _runs(keys: list[str] | None, count: int) -> list[tuple[int, int]]:
    """[start, end) of each run of equal consecutive keys; no keys: one run of everything."""
    if not keys:
        return [(0, count)]
    bounds = [i for i in range(1, count) if keys[i] != keys[i - 1]]
    return list(zip([0, *bounds], [*bounds, count], strict=True))


def _slice(rows: Rows, counts: list[int]) -> dict:
    """One slice, compacted as far as the format allows (Kueue's compactSliceEncoding)."""
    first = counts[0]
    same_counts = all(count == first for count in counts)
    return {
        "domainCount": len(rows),
        "valuesPerLevel": [_level_values(column) for column in zip(*rows, strict=True)],
        "podCounts": {"universal": first} if same_counts else {"individual": list(counts)},
    }


def _level_values(column: Sequence[str]) -> dict:
    """Universal when all values are equal, else the common prefix and suffix (each set only
    when non-empty) and the roots between them (Kueue's fillSingleCompactSliceValues)."""
    prefix = _common_prefix(column)
    if len(prefix) == max(map(len, column)):
        return {"universal": prefix}
    suffix = _common_prefix([value[::-1] for value in column])[::-1]
    shortest = min(map(len, column))
    if len(prefix) + len(suffix) > shortest:  # they may not overlap ("ababa", "aba")
        prefix = prefix[: shortest - len(suffix)]
    individual: dict = {}
    if prefix:
        individual["prefix"] = prefix
    if suffix:
        individual["suffix"] = suffix
    start = len(prefix)
    individual["roots"] = [value[start : len(value) - len(suffix)] for value in column]
    return {"individual": individual}


def _common_prefix(values: Sequence[str]) -> str:
    """The longest prefix of all `values`: that of the first and last in sorted order."""
    low, high = min(values), max(values)
    for i, (a, b) in enumerate(zip(low, high, strict=False)):
        if a != b:
            return low[:i]
    return low


def _go_json_size(obj: object) -> int:
    """The length of Go's json.Marshal of `obj`: compact UTF-8 like Python's, except that Go
    writes <, > and & and U+2028/U+2029 as six-character \\u escapes."""
    text = json.dumps(obj, separators=(",", ":"), ensure_ascii=False)
    size = len(text.encode("utf-8", "surrogatepass"))
    size += 5 * (text.count("<") + text.count(">") + text.count("&"))
    return size + 3 * (text.count("\u2028") + text.count("\u2029"))


# --- reading, with the schema's checks ---------------------------------------------------------


def _read_v1beta1(ta: Mapping) -> tuple[list[str], Rows, list[int]]:
    root = _mapping(ta, "topologyAssignment")
    levels = _levels(root.get("levels"))
    domains = _list(root.get("domains"), "domains", MAX_SLICES * MAX_DOMAINS_PER_SLICE)
    rows: Rows = []
    counts = []
    for i, domain in enumerate(domains):
        values, count = _plain_domain(domain, len(levels)) or _domain_checked(
            domain, f"domains[{i}]", len(levels)
        )
        rows.append(values)
        counts.append(count)
    return levels, rows, counts


def _plain_domain(domain: object, level_count: int) -> tuple[tuple[str, ...], int] | None:
    """A domain's values and count when it is plainly valid, checked cheaply (a fast path past
    _domain_checked, which builds a field name for every check)."""
    if type(domain) is dict:
        values, count = domain.get("values"), domain.get("count")
        if (
            type(values) is list
            and len(values) == level_count
            and type(count) is int
            and 1 <= count <= _INT32_MAX
            and all(type(value) is str for value in values)
        ):
            return tuple(values), count
    return None


def _domain_checked(domain: object, field: str, level_count: int) -> tuple[tuple[str, ...], int]:
    domain = _mapping(domain, field)
    values = _list(domain.get("values"), f"{field}.values", MAX_LEVELS)
    if len(values) != level_count:
        raise TopologyAssignmentError(
            f"{field}.values", f"{len(values)} values for {level_count} levels"
        )
    values = tuple(_string(value, f"{field}.values[{i}]") for i, value in enumerate(values))
    return values, _int32(domain.get("count"), f"{field}.count")


def _read_v1beta2(ta: Mapping) -> tuple[list[str], Rows, list[int]]:
    """Every slice is checked, and the repeated domains counted, before any is expanded."""
    root = _mapping(ta, "topologyAssignment")
    levels = _levels(root.get("levels"))
    slices = _list(root.get("slices"), "slices", MAX_SLICES)
    checked = [_slice_checked(s, f"slices[{i}]", len(levels)) for i, s in enumerate(slices)]
    repeated = sum(s["domainCount"] for s in checked if _repeats_one_domain(s))
    if repeated > MAX_REPEATED_DOMAINS:
        raise TopologyAssignmentError(
            "slices",
            f"{repeated} domains in slices with only universal values and pod counts; "
            f"at most {MAX_REPEATED_DOMAINS}",
        )
    rows: Rows = []
    counts: list[int] = []
    for s in checked:
        count = s["domainCount"]
        columns = [_column(level, count) for level in s["valuesPerLevel"]]
        rows.extend(zip(*columns, strict=True))
        pods = s["podCounts"]
        counts.extend(pods.get("individual") or [pods["universal"]] * count)
    return levels, rows, counts


def _slice_checked(s: object, field: str, level_count: int) -> Mapping:
    s = _mapping(s, field)
    count = _int32(s.get("domainCount"), f"{field}.domainCount")
    entries = _list(s.get("valuesPerLevel"), f"{field}.valuesPerLevel", MAX_LEVELS)
    if len(entries) != level_count:
        raise TopologyAssignmentError(
            f"{field}.valuesPerLevel", f"{len(entries)} entries for {level_count} levels"
        )
    for i, entry in enumerate(entries):
        _level_checked(entry, f"{field}.valuesPerLevel[{i}]", count)
    pods = _mapping(s.get("podCounts"), f"{field}.podCounts")
    if _one_of(pods, f"{field}.podCounts") == "universal":
        _int32(pods["universal"], f"{field}.podCounts.universal")
    else:
        field = f"{field}.podCounts.individual"
        individual = _sized_list(pods["individual"], field, count, "pod counts")
        if not all(type(n) is int and 1 <= n <= _INT32_MAX for n in individual):  # fast path
            for i, n in enumerate(individual):
                _int32(n, f"{field}[{i}]")
    return s


def _level_checked(entry: object, field: str, domain_count: int) -> None:
    entry = _mapping(entry, field)
    if _one_of(entry, field) == "universal":
        _string(entry["universal"], f"{field}.universal", MAX_VALUE_LENGTH)
        return
    field = f"{field}.individual"
    individual = _mapping(entry["individual"], field)
    for part in ("prefix", "suffix"):
        if individual.get(part) is not None:
            _string(individual[part], f"{field}.{part}", MAX_VALUE_LENGTH)
    roots = _sized_list(individual.get("roots"), f"{field}.roots", domain_count, "roots")
    if not all(type(root) is str and len(root) <= MAX_VALUE_LENGTH for root in roots):
        for i, root in enumerate(roots):  # find the culprit and name it
            _string(root, f"{field}.roots[{i}]", MAX_VALUE_LENGTH)


def _repeats_one_domain(s: Mapping) -> bool:
    """True when no list in the slice holds its domainCount (all universal)."""
    return s["podCounts"].get("universal") is not None and all(
        level.get("universal") is not None for level in s["valuesPerLevel"]
    )


def _column(level: Mapping, count: int) -> list[str]:
    universal = level.get("universal")
    if universal is not None:
        return [universal] * count
    individual = level["individual"]
    prefix = individual.get("prefix") or ""
    suffix = individual.get("suffix") or ""
    return [prefix + root + suffix for root in individual["roots"]]


def _one_of(obj: Mapping, field: str) -> str:
    """Which of universal and individual is set; exactly one must be."""
    # null counts as unset: the API server drops nulls, and Go reads them as nil
    has = [key for key in ("universal", "individual") if obj.get(key) is not None]
    if len(has) != 1:
        state = "both are" if has else "neither is"
        raise TopologyAssignmentError(
            field, f"exactly one of universal, individual must be set ({state})"
        )
    return has[0]


def _levels(levels: object) -> list[str]:
    levels = _list(levels, "levels", MAX_LEVELS)
    if not levels:
        raise TopologyAssignmentError("levels", "at least one level is required")
    return [_string(level, f"levels[{i}]", MAX_LEVEL_LENGTH) for i, level in enumerate(levels)]


def _sized_list(value: object, field: str, domain_count: int, noun: str) -> Sequence:
    """A list of exactly domainCount items (the schema's CEL rules), at most 100,000."""
    items = _list(value, field, MAX_DOMAINS_PER_SLICE)
    if len(items) != domain_count:
        raise TopologyAssignmentError(field, f"{len(items)} {noun} for domainCount {domain_count}")
    return items


def _mapping(value: object, field: str) -> Mapping:
    if not isinstance(value, Mapping):
        raise TopologyAssignmentError(field, f"must be an object, not {_json_type(value)}")
    return value


def _list(value: object, field: str, max_items: int) -> Sequence:
    if value is None:
        raise TopologyAssignmentError(field, "required")
    if not isinstance(value, list | tuple):
        raise TopologyAssignmentError(field, f"must be an array, not {_json_type(value)}")
    if len(value) > max_items:
        raise TopologyAssignmentError(field, f"{len(value)} items; at most {max_items}")
    return value


def _string(value: object, field: str, max_length: int | None = None) -> str:
    if not isinstance(value, str):
        raise TopologyAssignmentError(field, f"must be a string, not {_json_type(value)}")
    if max_length is not None and len(value) > max_length:
        raise TopologyAssignmentError(field, f"{len(value)} characters; at most {max_length}")
    return value


def _int32(value: object, field: str) -> int:
    """A positive int32: every count and domainCount is at least 1."""
    if not isinstance(value, int) or isinstance(value, bool):
        raise TopologyAssignmentError(field, f"must be an integer, not {_json_type(value)}")
    if not 1 <= value <= _INT32_MAX:
        shown = value if abs(value) < 10**12 else "out of range"
        raise TopologyAssignmentError(field, f"must be 1 to {_INT32_MAX}, not {shown}")
    return value


def _json_type(value: object) -> str:
    names = {bool: "boolean", int: "integer", float: "number", str: "string", type(None): "null"}
    if isinstance(value, Mapping):
        return "object"
    if isinstance(value, list | tuple):
        return "array"
    return names.get(type(value), type(value).__name__)
