# The tas-operator image, for those with a container engine: the same recipe as `make image`
# (which needs none), so both give the same image.
#
#   docker build -t tas-operator:0.2.0 --build-arg SOURCE_DATE_EPOCH=$(git log -1 --format=%ct) .
#
# The build stage is only a Debian build root, taken by digest (image/image.env
# DEBIAN_BUILD_IMAGE; `make image-lock` moves it): image/stage.sh installs the Debian packages
# pinned in image/debian-packages.lock, builds the operator's wheel from these sources and
# installs it with the dependencies pinned in image/requirements.lock, and assembles the root
# filesystem. The image is that root filesystem alone: no shell, no apt, no pip.
# tests/unit/image/test_image_recipe.py keeps this file in step with image/image.env.

FROM debian:bookworm-slim@sha256:88200866dfff7ea7f5cbcb6ec7c8a701889efe6fe859fe64d6990e4b07ea4171 AS build
ARG SOURCE_DATE_EPOCH=315532800
COPY pyproject.toml README.md /src/
COPY operator /src/operator
COPY image /src/image
RUN bash /src/image/stage.sh build /rootfs

FROM scratch
COPY --from=build /rootfs/ /
ENV PATH=/opt/tas/bin:/usr/bin:/bin \
    SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt \
    LANG=C.UTF-8 \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1
LABEL org.opencontainers.image.title="tas-operator" \
      org.opencontainers.image.description="Topology-aware admission of batch Jobs, serving Kueue's API" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.version="0.2.0"
# A numeric non-root user, so that the pod's runAsNonRoot can be verified by the kubelet.
USER 65532:65532
WORKDIR /
ENTRYPOINT ["/opt/tas/bin/tas"]
CMD ["operator"]
