# Build: docker build -t sketchd .
#   optionally --build-arg VERSION=v1.2.3 --build-arg REVISION=$(git rev-parse HEAD)
# Run:   docker run -p 8080:8080 -v sketchd-data:/data sketchd

ARG VERSION=dev
ARG REVISION=unknown

FROM golang:1.26-bookworm AS build
WORKDIR /src
# Modules first, so that source edits do not re-download them.
COPY go.mod go.sum ./
RUN go mod download && go mod verify
COPY . .
ARG VERSION
ARG REVISION
# Static, reproducible binary: no cgo, no local paths, no symbol table.
# main.version and main.revision feed sketchd_build_info; -X is a no-op
# for a variable the program does not declare.
RUN CGO_ENABLED=0 go build -trimpath \
        -ldflags="-s -w -X main.version=${VERSION} -X main.revision=${REVISION}" \
        -o /out/sketchd ./cmd/sketchd \
    && mkdir -p /out/data

# scratch holds nothing but the binary: no shell, no package manager.
FROM scratch
ARG VERSION
ARG REVISION
LABEL org.opencontainers.image.title="sketchd" \
      org.opencontainers.image.description="HyperLogLog and Count-Min sketches over HTTP, kept in bbolt" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}"
COPY --from=build /out/sketchd /sketchd
# The data directory must exist and belong to the runtime user before the
# VOLUME line: a new volume copies this ownership, whereas a directory the
# engine creates itself would be owned by root and unwritable.
COPY --from=build --chown=65532:65532 /out/data /data
# A numeric user, so that runAsNonRoot policies can verify it.
USER 65532:65532
ENV SKETCHD_ADDR=:8080 \
    SKETCHD_DATA=/data/sketchd.db
VOLUME ["/data"]
EXPOSE 8080
# No HEALTHCHECK: scratch has no client to run one; orchestrators probe
# GET /healthz (alive) and GET /readyz (ready) directly.
ENTRYPOINT ["/sketchd"]
