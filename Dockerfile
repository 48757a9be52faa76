# Build stage: compile TypeScript with the dev dependencies.
FROM node:22-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json .npmrc ./
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY api ./api
COPY bin ./bin
COPY ingest ./ingest
COPY jobs ./jobs
COPY search ./search
COPY shared ./shared
COPY events ./events
COPY webhooks ./webhooks
RUN npm run build

# Runtime stage: production dependencies and the compiled code only.
FROM node:22-bookworm-slim
ENV NODE_ENV=production
WORKDIR /app
COPY package.json package-lock.json .npmrc ./
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund && npm cache clean --force
COPY --from=build /app/dist ./dist
COPY samples ./samples
USER node
# Exec form, node itself: `docker stop`'s SIGTERM reaches bizdir, with no npm or shell in between
# to swallow it (docker-compose.yml adds `init: true` in front; `docker run --init` does the same).
ENTRYPOINT ["node", "dist/bin/bizdir.js"]
CMD ["serve"]
