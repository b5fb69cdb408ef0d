"""Pure placement: plain data in, topology assignment out. No I/O, no Kubernetes client."""
