"""AppWrapper (`workload.codeflare.dev/appwrapper`), as Kueue's pkg/controller/jobs/appwrapper.

An AppWrapper wraps resources (`spec.components[].template`: a Job, JobSet, PyTorchJob,
RayCluster, Deployment, any object with pod templates) and is admitted as one Workload.

- components.py: a component's pod sets (declared in `podSets`, or inferred for the kinds the
  AppWrapper controller knows) and the pod templates at their paths. Pure.
- controller.py: the AppWrapper as a GenericJob (a pod set per component pod set, named
  `<appwrapper>-<n>`, ranked by the label its pod set names; started by writing
  `podSetInfos`, which the AppWrapper controller puts into the wrapped templates).
- webhook.py: suspended at creation; every pod template's topology annotations validated.

Pods are owned AppWrapper -> wrapped object (owner reference, and the label
`workload.codeflare.dev/appwrapper: <name>` on it and on its pod templates) -> that kind's own
children (a PyTorchJob's pods, a Job's pods, ...).
"""
