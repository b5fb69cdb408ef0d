"""JobSet (`jobset.x-k8s.io/jobset`), as Kueue's pkg/controller/jobs/jobset.

- controller.py: the JobSet as a GenericJob (a pod set per replicatedJob, ranked by Job index
  and completion index; start, stop and restore); jobframework's JobReconciler drives it.
- webhook.py: suspended at creation; every replicatedJob's topology annotations validated.
"""
