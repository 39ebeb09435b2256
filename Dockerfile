# The mcpsign image: the static mcpsign binary on an empty base, run as a
# user that is not root. No stage builds anything and nothing is pulled
# from a registry: scripts/container builds the binary first
# (CGO_ENABLED=0, -trimpath, -ldflags "-s -w") and gives docker a build
# context that holds only it and the host's CA certificates (for HTTPS
# upstreams, Fulcio, Rekor and TUF):
#
#   scripts/container build        # the image mcpsign:dev
#   scripts/container test         # build, then a session through `mcpsign serve` in it, SIGTERM, drained
#
# docs/DEPLOY.md runs it as a Kubernetes sidecar.
FROM scratch
COPY ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY mcpsign /usr/local/bin/mcpsign
ENV PATH=/usr/local/bin
# 65532: the conventional "nonroot" user of distroless images; files a
# Pod mounts are readable by it with fsGroup or world-readable modes.
USER 65532:65532
EXPOSE 8080
ENTRYPOINT ["mcpsign"]
CMD ["--help"]
