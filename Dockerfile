# Build stage: compile TypeScript, then keep production dependencies only: the framework's (package.json)
# and the bundled operators' (src/handlers/package.json, an npm workspace that is never published).
FROM node:20-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
COPY src/handlers/package.json ./src/handlers/
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
COPY bin ./bin
COPY crds ./crds
COPY monitoring ./monitoring
# The workspace's link (node_modules/@konductor/operators -> src/handlers) would dangle in the image.
RUN npm run build && npm prune --omit=dev && rm -f node_modules/@konductor/operators

# Runtime stage: compiled code and production dependencies, run as a non-root user.
FROM node:20-bookworm-slim
ENV NODE_ENV=production
WORKDIR /app
COPY --from=build /app/package.json ./
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY --from=build /app/bin ./bin
COPY --from=build /app/crds ./crds
COPY --from=build /app/monitoring ./monitoring
USER 10001:10001
EXPOSE 8080
ENTRYPOINT ["node", "bin/konductor.mjs"]
CMD ["run", "dist/handlers", "--all-namespaces"]
