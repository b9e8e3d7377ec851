# ratelimit-sidecar image: compiled JavaScript on Node 20, runs as a non-root user.
FROM node:20-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
RUN npm run build

FROM node:20-bookworm-slim
# No CONFIG_DIR here: the default ./config is a link to /etc/ratelimit, so that a deployment's own rules setting
# (CONFIG_DIR, or envoyproxy/ratelimit's RUNTIME_ROOT/RUNTIME_SUBDIRECTORY) is never contradicted by the image's.
ENV NODE_ENV=production
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force
COPY --from=build /app/dist ./dist
COPY bin ./bin
COPY proto ./proto
COPY config /etc/ratelimit
RUN ln -s /etc/ratelimit /app/config
USER node
EXPOSE 8081 8080
ENTRYPOINT ["node", "bin/ratelimit.mjs"]
CMD ["serve"]
