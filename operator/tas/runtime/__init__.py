"""The operator's runtime, apart from kopf: the cache and its watches, the workers, the lease
and its fence, and the storage migration run at start-up (handlers/ wires it into kopf)."""
