"""batch/v1 Job (`batch/job`), as Kueue's pkg/controller/jobs/job.

- controller.py: the Job as a GenericJob (GVK, its one pod set "main", rank label, start, stop
  and restore); jobframework's JobReconciler drives it.
- webhook.py: suspended at creation; topology annotations validated.
"""
