# syntax=docker/dockerfile:1
# chainsift: one image for every process (ingest, the consuming stages, the API, npm start).
# docker-compose.yml builds it and picks the process with `command:`; docs/operations.md says
# how the stages scale. Not built on our machines (no Docker engine): see README "Containers".
#
#   docker build -t chainsift .
#   docker run --rm chainsift dist/cli/stage.js decode      # one consuming stage
#   docker run --rm -p 127.0.0.1:8080:8080 -e CHAINSIFT_API_HOST=0.0.0.0 chainsift dist/cli/api.js
#
# `npm run build` (tsc -p tsconfig.build.json) writes the JavaScript entry points to dist/ with the
# source layout (dist/cli/stage.js, dist/cli/api.js, dist/cli/start.js, dist/cli/chainsift.js), and
# the web console's bundle to dist/console/ (console/build.ts; served at /console/, docs/console.md).

ARG NODE_IMAGE=node:24-bookworm-slim

# 1. Build: every dependency (TypeScript; `prepare` skips the console build until the source is
# copied), then the compiled JavaScript and the console bundle in dist/.
FROM ${NODE_IMAGE} AS build
WORKDIR /app
COPY package.json package-lock.json ./
# patches/: what the postinstall script (patch-package) applies to node_modules (docs/kafka-client.md).
COPY patches ./patches
# `npm install` as .ci/run does (npm ci rejects the lock where a registry lacks other platforms'
# optional builds); the lock still pins every version.
RUN npm install --no-audit --no-fund
COPY . .
RUN npm run build

# 2. Runtime dependencies only. Install scripts are skipped: no runtime dependency needs one for the
# container's processes (@foundry-rs/anvil's fetches the anvil binary, used by `npm start`'s
# development chain only). Our own postinstall, the kafkajs patch, runs explicitly after.
FROM ${NODE_IMAGE} AS deps
WORKDIR /app
COPY package.json package-lock.json ./
COPY patches ./patches
RUN npm install --omit=dev --ignore-scripts --no-audit --no-fund && npm run postinstall

# 3. Runtime: plain node, the compiled code, production dependencies, as the unprivileged `node` user.
FROM ${NODE_IMAGE} AS runtime
ENV NODE_ENV=production \
    LOG_FORMAT=json \
    CHAINSIFT_API_HOST=0.0.0.0 \
    CHAINSIFT_METRICS_HOST=0.0.0.0
WORKDIR /app
COPY --from=deps --chown=root:root /app/node_modules ./node_modules
COPY --from=build --chown=root:root /app/dist ./dist
COPY --chown=root:root package.json ./
USER node
# 8080: the API; 9464: each process's metrics server (/metrics, /healthz, /readyz).
EXPOSE 8080 9464
ENTRYPOINT ["node", "--enable-source-maps"]
CMD ["dist/cli/api.js"]
