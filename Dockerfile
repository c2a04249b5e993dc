# syntax=docker/dockerfile:1
# credhook's container image. Its payload is the packed install that
# packages/server/test/packed-install.test.ts exercises: the workspace packed with
# `pnpm pack` and the tarballs installed with npm (scripts/pack.mjs), nothing else
# of the repository.
#
#   docker build -t credhook .                     # --build-arg NODE_VERSION=22 for Node 22
#   docker run --read-only --tmpfs /tmp -v credhook-data:/var/lib/credhook \
#     -e CREDHOOK_PASSWORD=… -p 8080:8080 credhook
#
# Runs as the image's unprivileged `node` user (uid 1000), writes only to
# /var/lib/credhook (SQLite, the generated password's hash) and /tmp, so the root
# filesystem can be read-only. Config: mount /etc/credhook/webhook.config.yaml, or
# run the embedded default (README "Deploy").
# Node 24 by default: the same requests cost credhook about 40 % less CPU than on Node 22 (README "Container").
ARG NODE_VERSION=24

FROM node:${NODE_VERSION}-bookworm-slim AS build
WORKDIR /src
COPY . .
# No native build anywhere: better-sqlite3 13 ships its Node-API addon prebuilt in its package.
RUN npx --yes pnpm@10 install --frozen-lockfile --ignore-scripts \
 && node scripts/pack.mjs pack /packs \
 && node scripts/pack.mjs install /packs /opt/credhook

FROM node:${NODE_VERSION}-bookworm-slim
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
