# The tas-operator image, as the Helm chart (helm/tas-operator) runs it.
#
#   docker build -t tas-operator:0.1.0 .
#
# Not built or tested in this repository's CI: the machines it runs on have no container
# engine (the e2e tests run the operator as a host process instead).
FROM python:3.11-slim

# No .pyc files at run time: the chart mounts the root filesystem read-only.
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

WORKDIR /src
# Only what the package build needs (pyproject.toml names README.md as the long description).
COPY pyproject.toml README.md ./
COPY operator ./operator
RUN pip install . && rm -rf /src

# A numeric non-root user, so that the pod's runAsNonRoot can be verified by the kubelet.
USER 65532:65532
WORKDIR /
ENTRYPOINT ["tas"]
CMD ["operator"]
