# ratelimit-sidecar image: compiled JavaScript on a maintained Node.js LTS, run as a numeric non-root UID
# (so the kubelet can verify runAsNonRoot). The base image is pinned to an exact release, the Node that the tests,
# the benchmarks and CI run (package.json config.node; a test fails when the two differ): bump both, don't float it.
ARG NODE_VERSION=24.17.0

FROM node:${NODE_VERSION}-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
# dist/cli.js is then bundled (scripts/bundle.ts, with tsx's esbuild): one file to load at start instead of ~180 modules.
COPY scripts/bundle.ts ./scripts/
RUN npm run build

FROM node:${NODE_VERSION}-bookworm-slim
# No CONFIG_DIR here: the default ./config is a link to /etc/ratelimit, so that a deployment's own rules setting
# (CONFIG_DIR, or envoyproxy/ratelimit's RUNTIME_ROOT/RUNTIME_SUBDIRECTORY) is never contradicted by the image's.
ENV NODE_ENV=production
# The young generation's size, explicit so that it does not change with Node's version: 16 MiB semi-spaces keep
# a sidecar's resident memory low (docs/performance-settings.md#the-young-generation-max-semi-space-size: 64 saves some GC
# under load for ~80 MiB more). A NODE_OPTIONS of your own replaces this: keep the flag in it (dist/cli.js's code
# cache serves any heap size, but other V8 options compile the service at start).
ENV NODE_OPTIONS=--max-semi-space-size=16
# At most two malloc arenas: Node's threads (V8's GC helpers, libuv's pool) otherwise each grow an arena of
# their own under load and keep it, ~6 MiB of resident memory for no measurable CPU (docs/performance.md#footprint-start-up-rest-and-memory-beside-envoyproxyratelimit).
ENV MALLOC_ARENA_MAX=2
WORKDIR /app
COPY package.json package-lock.json ./
# Production dependencies only: tsx and the test tooling are dev dependencies.
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force
COPY --from=build /app/dist ./dist
COPY bin ./bin
COPY proto ./proto
COPY config /etc/ratelimit
RUN ln -s /etc/ratelimit /app/config
# Also answers at /bin/ratelimit like envoyproxy/ratelimit's image: serves, ignoring arguments as it does
# (bin/ratelimit-reference.sh).
COPY bin/ratelimit-reference.sh /bin/ratelimit
RUN chmod 0755 /bin/ratelimit
# The base image's "node" user, by number: a name cannot be checked against runAsNonRoot.
USER 1000:1000
EXPOSE 8081 8080
# dist/cli.js directly: bin/ratelimit.mjs (the package's bin) would add an ES module load, ~9 ms of the start.
ENTRYPOINT ["node", "/app/dist/cli.js"]
CMD ["serve"]
