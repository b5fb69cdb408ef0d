"""JobSet (jobset.x-k8s.io/v1alpha2) integration: a GenericJob with a pod set per replicatedJob."""
