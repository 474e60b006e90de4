# Build: docker build -t sketchd .
#   optionally --build-arg VERSION=v1.2.3 --build-arg REVISION=$(git rev-parse HEAD)
#   --build-arg CREATED=$(date -u +%FT%TZ) (and SOURCE, LICENSES: below)
# Run:   docker run -p 8080:8080 -v sketchd-data:/data sketchd
#
# The build context has no .git (.dockerignore), so the binary carries no
# VCS stamp: sketchd -version prints what VERSION and REVISION give it.

ARG VERSION=dev
ARG REVISION=unknown
# When the image was built (RFC 3339); empty unless given.
ARG CREATED=
# Where the source lives, and the SPDX expression of its licence
# (LICENSE, NOTICE).
ARG SOURCE=https://github.com/sketchd/sketchd
ARG LICENSES=Apache-2.0

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

# scratch holds nothing but the binary and the CA certificates: no shell,
# no package manager.
FROM scratch
ARG VERSION
ARG REVISION
ARG CREATED
ARG SOURCE
ARG LICENSES
LABEL org.opencontainers.image.title="sketchd" \
      org.opencontainers.image.description="HyperLogLog, Count-Min, theta and frequency sketches and series over HTTP, kept in bbolt or PostgreSQL" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.created="${CREATED}" \
      org.opencontainers.image.source="${SOURCE}" \
      org.opencontainers.image.licenses="${LICENSES}"
# Go reads the system's roots from this file: -postgres with
# sslmode=verify-full (or verify-ca) needs them to check the server.
COPY --from=build /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY --from=build /out/sketchd /sketchd
COPY --from=build /src/LICENSE /src/NOTICE /
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
