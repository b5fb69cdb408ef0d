"""The `tas` command: `tas solve`, `tas simulate`, `tas contest`, `tas top`, `tas operator`,
`tas migrate-storage`, `tas view`."""

from __future__ import annotations

import gc

# Every object an import makes lives as long as the process: a collection while modules load
# only walks them again and again. None runs while this module's imports load (`tas operator`
# pauses it again for its own: tas.pacing.imports_uncollected).
_COLLECTING = gc.isenabled()
gc.disable()
try:
    import argparse
    import sys
    from typing import overload

    from tas import __version__
    from tas.config import (
        DEFAULT_DEFRAGMENTATION_MOVES_PER_HOUR,
        DEFAULT_VIEW_ADDRESS,
        MAX_REVIEW_BYTES,
        Settings,
    )
    from tas.offline.contest import names as contest_names
finally:
    if _COLLECTING:
        gc.enable()

SYNC_BEFORE_KOPF_SECONDS = 10.0


def _solve(args: argparse.Namespace) -> int:
    from tas.offline import scenario

    return scenario.main(args.file, sys.stdout, sys.stderr, stats=args.stats, output=args.output)


def _simulate(args: argparse.Namespace) -> int:
    from tas.offline.simulate import run

    return run.main(
        args.file,
        sys.stdout,
        sys.stderr,
        plot=args.plot,
        compare_gates=args.compare,
        output=args.output,
    )


def _top(args: argparse.Namespace) -> int:
    from tas.view import top

    return top.main(
        sys.stdout,
        sys.stderr,
        url=args.url,
        interval=args.interval,
        once=args.once,
        trace=args.trace,
        at=args.at,
    )


def _contest(args: argparse.Namespace) -> int:
    from tas.offline.contest import adapter

    return adapter.main(
        sys.stdin, sys.stdout, sys.stderr, gates=args.feature_gates, planner=args.planner
    )


def _migrate_storage(args: argparse.Namespace) -> int:
    import asyncio

    from tas.kube import Kube, KubeError
    from tas.kube.kubeconfig import KubeconfigError, load_connection
    from tas.runtime import migrate

    async def run() -> list[str]:
        kube = Kube(load_connection(args.kubeconfig), component="tas-migrate-storage")
        try:
            return (await migrate.migrate(kube)).lines()
        finally:
            await kube.close()

    try:
        lines = asyncio.run(run())
    except (KubeError, KubeconfigError) as exc:
        print(f"tas migrate-storage: {' '.join(str(exc).split())[:500]}", file=sys.stderr)
        return 1
    for line in lines:
        print(line)
    return 0


def _kueue_config(path: str | None):
    """The fair-sharing sections of a Kueue Configuration file; ValueError names the field."""
    from tas.api import fairsharing

    if not path:
        return fairsharing.FairSharingConfig()
    import yaml

    try:
        with open(path, encoding="utf-8") as file:
            document = yaml.safe_load(file)
    except (OSError, yaml.YAMLError) as exc:
        raise ValueError(
            f"--kueue-config: cannot read {path}: {' '.join(str(exc).split())}"
        ) from None
    try:
        return fairsharing.parse(document)
    except ValueError as exc:
        raise ValueError(f"--kueue-config {path}: {exc}") from None


def _operator(args: argparse.Namespace) -> int:
    from tas.pacing import imports_uncollected

    with imports_uncollected():
        from tas import features, integrations
        from tas.kube.kubeconfig import default_namespace

    try:
        gates = features.from_env_and_flag(args.feature_gates)
        features.activate(gates)
    except features.FeatureGateError as exc:
        print(f"tas operator: --feature-gates: {exc}", file=sys.stderr)
        return 2
    try:
        enabled = integrations.from_env_and_flag(args.integrations)
    except integrations.IntegrationsError as exc:
        print(f"tas operator: --integrations: {exc}", file=sys.stderr)
        return 2
    try:
        webhooks, tenants = _webhook_addresses(args), _tenant_settings(args)
        _check_view_address(args.view_address)
        if args.defragmentation_moves_per_hour < 0:
            raise ValueError("--defragmentation-moves-per-hour: must be 0 or more")
        fair_sharing = _kueue_config(args.kueue_config)
    except ValueError as exc:
        print(f"tas operator: {exc}", file=sys.stderr)
        return 2
    settings = Settings(
        kubeconfig=args.kubeconfig,
        namespaces=tuple(args.namespace or ()),
        gates=gates,
        integrations=enabled,
        webhook_listen=args.webhook_listen,
        webhook_port=args.webhook_port,
        webhook_host=args.webhook_host,
        webhook_cert_dir=args.webhook_cert_dir,
        **webhooks,
        webhook_max_review_bytes=args.webhook_max_review_bytes,
        metrics_port=args.metrics_port,
        log_level=args.log_level,
        leader_elect=args.leader_elect,
        leader_election_namespace=(
            args.leader_election_namespace or default_namespace(args.kubeconfig)
        ),
        **tenants,
        view_address=args.view_address,
        defragmentation_moves_per_hour=args.defragmentation_moves_per_hour,
        fair_sharing=fair_sharing,
    )
    _configure_logging(settings.log_level, gates)
    import asyncio

    from tas.kube.kubeconfig import KubeconfigError

    try:
        asyncio.run(_run_operator(settings, args.liveness))
    except KubeconfigError as exc:
        print(f"tas operator: {exc}", file=sys.stderr)
        return 2
    return 0


def _check_view_address(address: str) -> None:
    from tas.view.address import parse_address

    if address:
        try:
            parse_address(address)
        except ValueError as exc:
            raise ValueError(f"--view-address: {exc}") from None


def _view(args: argparse.Namespace) -> int:
    """`tas view`: the topology view from a workstation, read-only (no lease, no writes)."""
    import asyncio

    from tas import features
    from tas.kube.kubeconfig import KubeconfigError
    from tas.runtime import viewonly

    try:
        gates = features.from_env_and_flag(args.feature_gates)
        features.activate(gates)
        if not args.address:
            raise ValueError("--address: must not be empty")
        _check_view_address(args.address)
    except (features.FeatureGateError, ValueError) as exc:
        print(f"tas view: {exc}", file=sys.stderr)
        return 2
    settings = Settings(kubeconfig=args.kubeconfig, gates=gates, view_address=args.address)
    _configure_logging(args.log_level, gates)
    try:
        return asyncio.run(viewonly.run(settings))
    except KubeconfigError as exc:
        print(f"tas view: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 0


def _webhook_addresses(args: argparse.Namespace) -> dict:
    """--webhook-service and --webhook-cert-secret as Settings fields; a ValueError names the
    flag."""
    out: dict = {"webhook_service": None, "webhook_cert_secret": None}
    if args.webhook_service:
        try:
            namespace, rest = args.webhook_service.split("/", 1)
            name, _, port = rest.partition(":")
            out["webhook_service"] = (namespace, name, int(port or 443))
        except ValueError:
            raise ValueError(
                f"--webhook-service: {args.webhook_service!r} is not NAMESPACE/NAME[:PORT]"
            ) from None
    if args.webhook_cert_secret:
        namespace, _, name = args.webhook_cert_secret.partition("/")
        if not namespace or not name or "/" in name:
            raise ValueError(
                f"--webhook-cert-secret: {args.webhook_cert_secret!r} is not NAMESPACE/NAME"
            )
        out["webhook_cert_secret"] = (namespace, name)
    return out


def _configure_logging(level: str, gates) -> None:
    import logging

    from tas import features

    logging.basicConfig(
        level=getattr(logging, level.upper(), logging.INFO),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    # kopf logs every handler call on every object; with thousands of pods that is most of the
    # work. Keep its per-object lines and the HTTP access logs to warnings.
    for noisy in ("kopf.objects", "kopf.activities.probe", "aiohttp.access"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    logging.captureWarnings(True)  # e.g. urllib3's InsecureRequestWarning, once, into the log
    for line in features.no_effect_lines(gates):
        logging.getLogger("tas.features").info(line)


def _tenant_settings(args: argparse.Namespace) -> dict:
    """--managed-jobs-namespace-selector and --max-leaderworkerset-replicas as Settings
    fields (those not given keep their defaults); a ValueError names the flag."""
    from tas.config import parse_label_selector

    out: dict = {}
    if args.managed_jobs_namespace_selector:
        try:
            out["managed_jobs_namespace_selector"] = parse_label_selector(
                args.managed_jobs_namespace_selector
            )
        except ValueError as exc:
            raise ValueError(f"--managed-jobs-namespace-selector: {exc}") from None
    if args.max_leaderworkerset_replicas is not None:
        if args.max_leaderworkerset_replicas < 1:
            raise ValueError("--max-leaderworkerset-replicas: must be at least 1")
        out["max_leaderworkerset_replicas"] = args.max_leaderworkerset_replicas
    return out


async def _run_operator(settings, liveness: str | None) -> None:
    """List the cluster and admit once first, then load kopf and the webhooks: on a restart
    the first admission waits for the lists, not for kopf. Loading kopf beside the lists, even
    in a thread, slowed them by half (one interpreter lock), and admission does not need kopf."""
    import asyncio
    import importlib

    from tas.pacing import imports_uncollected

    with imports_uncollected(set_aside=True):
        from tas.runtime.runtime import Runtime

    runtime = Runtime(settings)
    runtime.start()
    # Bounded: with the API server away, the webhooks and the liveness probe still come up.
    await asyncio.wait(
        [asyncio.ensure_future(runtime.past_first_admissions())], timeout=SYNC_BEFORE_KOPF_SECONDS
    )
    # In a thread, so that the admissions after the first need not wait for the import.
    await asyncio.to_thread(importlib.import_module, "tas.handlers.operator")  # registers them
    import kopf

    from tas.handlers.operator import ForgetfulMemories

    await kopf.operator(
        standalone=True,
        memories=ForgetfulMemories(),
        clusterwide=not settings.namespaces,
        namespaces=list(settings.namespaces),
        memo=kopf.Memo(settings=settings, runtime=runtime),
        liveness_endpoint=liveness,
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tas", description="Topology-aware admission of batch Jobs, speaking Kueue's API."
    )
    parser.add_argument("--version", action="version", version=f"tas {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    _add_offline_commands(sub)
    _add_top(sub)
    _add_migrate_storage(sub)
    _add_view(sub)
    op = sub.add_parser("operator", help="run the operator against a cluster")
    _add_operator_flags(op)
    _add_webhook_flags(op)
    op.set_defaults(func=_operator)
    return parser


def _add_offline_commands(sub) -> None:
    """`tas solve`, `tas simulate` and `tas contest`: no cluster needed."""
    solve = sub.add_parser("solve", help="place a scenario's workloads offline and print JSON")
    solve.add_argument("file", help="scenario YAML or JSON (docs/reference/scenario-format.md)")
    solve.add_argument(
        "--stats",
        action="store_true",
        help="also print on stderr, as one JSON line, the parse time and the placement time "
        "per workload (total, p50, p99), all workloads and admitted and rejected apart",
    )
    _add_output_flag(solve)
    solve.set_defaults(func=_solve)

    simulate = sub.add_parser(
        "simulate", help="replay a trace of arrivals and departures offline and report on it"
    )
    simulate.add_argument("file", help="trace YAML or JSON (docs/reference/trace-format.md)")
    simulate.add_argument("--plot", metavar="FILE.png", help="also draw the report over time")
    simulate.add_argument(
        "--compare", metavar="GATES", help="A=true,B=false: run again with these gates on top"
    )
    _add_output_flag(simulate)
    simulate.set_defaults(func=_simulate)

    contest = sub.add_parser(
        "contest",
        help="serve the VM placement-group protocol on stdin/stdout (docs/concepts/placement-groups.md)",
    )
    contest.add_argument(
        "--feature-gates",
        metavar="GATES",
        help="A=true,B=false (TASProfileFragmentationAware changes the groups planner)",
    )
    contest.add_argument(
        "--planner",
        choices=contest_names.PLANNERS,
        default=contest_names.DEFAULT_PLANNER,
        help="how VMs are placed (default %(default)s; first-fit and best-fit: plain baselines)",
    )
    contest.set_defaults(func=_contest)


def _add_output_flag(command: argparse.ArgumentParser) -> None:
    from tas.offline.formats import FORMATS

    command.add_argument(
        "-o",
        "--output",
        choices=FORMATS,
        default=None,
        help="json or yaml: the report (what a pipe gets); text: a short summary (what a "
        "terminal gets)",
    )


def _add_top(sub) -> None:
    top = sub.add_parser(
        "top", help="the topology's occupancy and the pending workloads, in the terminal"
    )
    top.add_argument(
        "--url",
        default=f"http://{DEFAULT_VIEW_ADDRESS}",
        help="the operator's view at its --view-address, or `tas view`'s (from afar, kubectl "
        "port-forward); reads URL/model.json (default: %(default)s)",
    )
    top.add_argument("--interval", type=float, metavar="SECONDS", help="between refreshes")
    top.add_argument("--once", action="store_true", help="print one frame and exit")
    top.add_argument("--trace", metavar="FILE", help="a `tas simulate` trace instead (with --at)")
    top.add_argument(
        "--at", type=float, metavar="SECONDS", help="the time in the trace's simulated clock"
    )
    top.set_defaults(func=_top)


def _add_migrate_storage(sub) -> None:
    migrate_storage = sub.add_parser(
        "migrate-storage",
        help="rewrite every object of our CRDs in the stored version (v1beta2) and trim the "
        "CRDs' storedVersions (after an upgrade; the operator also does it when it leads)",
    )
    migrate_storage.add_argument(
        "--kubeconfig",
        default=env_default("KUBECONFIG_PATH"),
        help="default: in-cluster, then ~/.kube/config",
    )
    migrate_storage.set_defaults(func=_migrate_storage)


def _add_view(sub) -> None:
    view = sub.add_parser(
        "view",
        help="serve the live topology view from this machine (read-only: lists and watches, "
        "never writes)",
    )
    view.add_argument(
        "--kubeconfig",
        default=env_default("KUBECONFIG_PATH"),
        help="default: in-cluster, then ~/.kube/config",
    )
    view.add_argument(
        "--address",
        default=env_default("VIEW_ADDRESS", DEFAULT_VIEW_ADDRESS),
        help=f"HOST:PORT to serve the page on (default {DEFAULT_VIEW_ADDRESS}; it has no "
        "authentication, keep it on localhost)",
    )
    view.add_argument("--feature-gates", default=None, help="A=true,B=false (as the operator's)")
    view.add_argument("--log-level", default=env_default("LOG_LEVEL", "INFO"))
    view.set_defaults(func=_view)


def _add_operator_flags(op: argparse.ArgumentParser) -> None:
    op.add_argument(
        "--kubeconfig",
        default=env_default("KUBECONFIG_PATH"),
        help="default: in-cluster, then ~/.kube/config",
    )
    op.add_argument("--namespace", action="append", help="watch only this namespace (repeatable)")
    op.add_argument("--feature-gates", default=None, help="A=true,B=false (also TAS_FEATURE_GATES)")
    op.add_argument(
        "--integrations",
        default=None,
        help="kinds to admit, Kueue's integrations.frameworks names, comma-separated (an "
        "unknown name is refused with the list of known ones; also TAS_INTEGRATIONS; default "
        "batch/job)",
    )
    op.add_argument("--metrics-port", type=int, default=int(env_default("METRICS_PORT", "0")))
    op.add_argument(
        "--leader-elect",
        action=argparse.BooleanOptionalAction,
        default=env_default("LEADER_ELECT", "true").lower() == "true",
        help="only the replica holding the Lease admits (default: on)",
    )
    op.add_argument(
        "--leader-election-namespace",
        default=env_default("LEADER_ELECTION_NAMESPACE"),
        help="namespace of the Lease (default: the pod's, else TAS_POD_NAMESPACE, else the "
        "kubeconfig context's, else tas-system)",
    )
    _add_policy_flags(op)
    op.add_argument("--liveness", default=None, help="e.g. http://0.0.0.0:8080/healthz")
    op.add_argument("--log-level", default=env_default("LOG_LEVEL", "INFO"))


def _add_policy_flags(op: argparse.ArgumentParser) -> None:
    """What the operator admits, and how: namespaces, bounds, fair sharing, defragmentation."""
    op.add_argument(
        "--managed-jobs-namespace-selector",
        default=env_default("MANAGED_JOBS_NAMESPACE_SELECTOR"),
        help="Kueue's managedJobsNamespaceSelector as JSON: queued objects in other namespaces "
        "are left alone (default: every namespace but kube-system and the operator's own)",
    )
    op.add_argument(
        "--max-leaderworkerset-replicas",
        type=int,
        default=env_default("MAX_LEADERWORKERSET_REPLICAS"),
        help="the most replicas (one Workload each) a queued LeaderWorkerSet may ask for; more "
        "are refused (default: tas.config.DEFAULT_MAX_LEADERWORKERSET_REPLICAS)",
    )
    op.add_argument(
        "--view-address",
        default=env_default("VIEW_ADDRESS", DEFAULT_VIEW_ADDRESS),
        help="HOST:PORT of the read-only topology view (default "
        f"{DEFAULT_VIEW_ADDRESS}: it has no authentication; empty disables it)",
    )
    op.add_argument(
        "--defragmentation-moves-per-hour",
        type=int,
        default=int(
            env_default(
                "DEFRAGMENTATION_MOVES_PER_HOUR", str(DEFAULT_DEFRAGMENTATION_MOVES_PER_HOUR)
            )
        ),
        help="gate TASDefragmentation: the most running workloads of one ClusterQueue moved "
        f"in an hour to open room for waiting gangs (default {DEFAULT_DEFRAGMENTATION_MOVES_PER_HOUR})",
    )
    op.add_argument(
        "--kueue-config",
        default=env_default("KUEUE_CONFIG"),
        help="a Kueue Configuration file (YAML, config.kueue.x-k8s.io v1beta1 or v1beta2): its "
        "fairSharing and admissionFairSharing sections are read, the rest is ignored",
    )


def _add_webhook_flags(op: argparse.ArgumentParser) -> None:
    op.add_argument("--webhook-listen", default=env_default("WEBHOOK_LISTEN", "127.0.0.1"))
    op.add_argument("--webhook-port", type=int, default=int(env_default("WEBHOOK_PORT", "9443")))
    op.add_argument(
        "--webhook-host", default=env_default("WEBHOOK_HOST"), help="name in the webhook URL"
    )
    op.add_argument(
        "--webhook-cert-dir",
        default=env_default("WEBHOOK_CERT_DIR"),
        help="where the served certificate is written (default: a private temporary directory)",
    )
    op.add_argument(
        "--webhook-cert-secret",
        default=env_default("WEBHOOK_CERT_SECRET"),
        help="NAMESPACE/NAME of the Secret holding the webhooks' certificate, shared by every "
        "replica and renewed before it expires (the chart's); default: one made in memory",
    )
    op.add_argument(
        "--webhook-service",
        default=env_default("WEBHOOK_SERVICE"),
        help="NAMESPACE/NAME[:PORT] of the Service in front of the webhooks (in a pod)",
    )
    op.add_argument(
        "--webhook-max-review-bytes",
        type=positive_int,
        default=env_default("WEBHOOK_MAX_REVIEW_BYTES", str(MAX_REVIEW_BYTES)),
        help="the largest admission review read; a larger one is refused "
        f"(default {MAX_REVIEW_BYTES})",
    )


def positive_int(text: str) -> int:
    value = int(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive number")
    return value


@overload
def env_default(name: str, default: str) -> str: ...
@overload
def env_default(name: str, default: None = None) -> str | None: ...
def env_default(name: str, default: str | None = None) -> str | None:
    import os

    return os.environ.get("TAS_" + name, default)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
