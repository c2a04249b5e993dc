# syntax=docker/dockerfile:1
# credhook's container image. Its payload is the packed install that
# packages/server/test/packed-install.test.ts exercises: the workspace packed with
# `pnpm pack` and the tarballs installed with npm (scripts/pack.mjs), nothing else
# of the repository.
#
#   docker build -t credhook:0.1.0 .               # --build-arg BASE_IMAGE=… for Node 22 (below)
#   docker run --read-only --tmpfs /tmp -v credhook-data:/var/lib/credhook \
#     -e CREDHOOK_PASSWORD=… -p 8080:8080 credhook:0.1.0
#
# Runs as the image's unprivileged `node` user (uid 1000), writes only to
# /var/lib/credhook (SQLite, the generated password's hash) and /tmp, so the root
# filesystem can be read-only. Config: mount /etc/credhook/webhook.config.yaml, or
# run the embedded default (README "Deploy").
# Node 24 by default: the same requests cost credhook about 40 % less CPU than on Node 22 (README "Container").
# The base is pinned by digest (node 24.18.0 on Debian bookworm-slim), so a rebuild gets the same
# base until this line is changed on purpose. For Node 22:
#   --build-arg BASE_IMAGE=node:22-bookworm-slim@sha256:<digest of `docker buildx imagetools inspect node:22-bookworm-slim`>
ARG BASE_IMAGE=node:24-bookworm-slim@sha256:6f7b03f7c2c8e2e784dcf9295400527b9b1270fd37b7e9a7285cf83b6951452d

FROM ${BASE_IMAGE} AS build
WORKDIR /src
# The pnpm the repository pins (package.json "packageManager").
RUN npm install --global --no-audit --no-fund pnpm@10.34.9
# Dependencies first, from the manifests alone (with .npmrc and .pnpmfile.cjs: a BASE_IMAGE older than
# package.json's engines.node stops here, saying so): this layer is rebuilt only when a manifest or the
# lockfile changes, not on every source edit. No native build anywhere: better-sqlite3 13 ships its
# Node-API addon prebuilt in its package.
COPY package.json pnpm-lock.yaml pnpm-workspace.yaml .npmrc .pnpmfile.cjs ./
COPY packages/core/package.json packages/core/
COPY packages/fakes/package.json packages/fakes/
COPY packages/gateway/package.json packages/gateway/
COPY packages/provider-aws/package.json packages/provider-aws/
COPY packages/provider-azure/package.json packages/provider-azure/
COPY packages/provider-gcp/package.json packages/provider-gcp/
COPY packages/provider-kong/package.json packages/provider-kong/
COPY packages/provider-apigee/package.json packages/provider-apigee/
COPY packages/provider-local/package.json packages/provider-local/
COPY packages/provider-testkit/package.json packages/provider-testkit/
COPY packages/server/package.json packages/server/
COPY packages/store-postgres/package.json packages/store-postgres/
COPY packages/store-sqlite/package.json packages/store-sqlite/
RUN pnpm install --frozen-lockfile --ignore-scripts
# Then the sources: each package's prepack builds it as it is packed.
COPY . .
RUN node scripts/pack.mjs pack /packs \
 && node scripts/pack.mjs install /packs /opt/credhook

FROM ${BASE_IMAGE}
ARG BASE_IMAGE
ARG VERSION=0.1.0
LABEL org.opencontainers.image.title="credhook" \
      org.opencontainers.image.description="Multi-cloud credential-provisioning webhook for developer portals" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.base.name="${BASE_IMAGE}"
ENV NODE_ENV=production \
    PORT=8080 \
    CREDHOOK_DATA_DIR=/var/lib/credhook
COPY --from=build /opt/credhook /opt/credhook
RUN mkdir -p /etc/credhook /var/lib/credhook \
 && chown node:node /var/lib/credhook \
 && chmod 0700 /var/lib/credhook
USER node
# credhook looks for webhook.config.yaml in its working directory, else serves the embedded default.
WORKDIR /etc/credhook
VOLUME ["/var/lib/credhook"]
# 8080: the webhook; 8081: the embedded gateway of the default config (key check, OAuth token endpoint)
EXPOSE 8080 8081
HEALTHCHECK --interval=30s --timeout=3s --start-period=15s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.PORT||8080)+'/livez').then(r=>process.exit(r.status===204?0:1),()=>process.exit(1))"]
# node is PID 1 and handles SIGTERM itself: it drains in-flight requests, then exits 0.
ENTRYPOINT ["/opt/credhook/node_modules/.bin/credhook"]
CMD ["serve"]
