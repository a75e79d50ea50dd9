import { EXAMPLE, type ProjectSettings } from './settings.js';

/** The Dockerfile: production dependencies only; konductor compiles the TypeScript handlers at start. */
export function dockerfile(settings: ProjectSettings): string {
  return `# Production dependencies only: konductor compiles src/handlers.ts at start, with esbuild, which it depends on.
# Run \`npm install\` once first, so package-lock.json exists for \`npm ci\`.
FROM node:20-bookworm-slim
ENV NODE_ENV=production
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund
COPY src ./src
COPY crds ./crds
USER 10001:10001
EXPOSE 8080
ENTRYPOINT ["node_modules/.bin/konductor"]
CMD ["run", "src/handlers.ts", "--all-namespaces", "--log-format", "json"]
# Image name used by deploy/30-deployment.yaml: ${settings.appName}:0.1.0
`;
}

/** The namespace the operator runs in. */
export function operatorNamespace(settings: ProjectSettings): string {
  return `${settings.appName.slice(0, 56).replace(/-+$/, '')}-system`;
}

export function namespaceManifest(settings: ProjectSettings): string {
  return `apiVersion: v1
kind: Namespace
metadata:
  name: ${operatorNamespace(settings)}
  labels:
    app.kubernetes.io/name: ${settings.appName}
`;
}

export function serviceAccountManifest(settings: ProjectSettings): string {
  return `apiVersion: v1
kind: ServiceAccount
metadata:
  name: ${settings.appName}
  namespace: ${operatorNamespace(settings)}
  labels:
    app.kubernetes.io/name: ${settings.appName}
`;
}

/** Least privilege for the example: its resource and status, Events, and the leader-election Lease. */
export function rbacManifest(settings: ProjectSettings): string {
  const namespace = operatorNamespace(settings);
  return `# What the handlers in src/handlers.ts need. Add rules when your handlers read or write other resources.
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: ${settings.appName}
  labels:
    app.kubernetes.io/name: ${settings.appName}
rules:
  # Watching ${EXAMPLE.plural}; patch: finalizers and the framework's annotations.
  - apiGroups: ["${settings.group}"]
    resources: ["${EXAMPLE.plural}"]
    verbs: ["get", "list", "watch", "patch"]
  - apiGroups: ["${settings.group}"]
    resources: ["${EXAMPLE.plural}/status"]
    verbs: ["get", "patch"]
  # The ConfigMaps the reconcile keeps: watched (owned children wake their owner) and applied.
  - apiGroups: [""]
    resources: ["configmaps"]
    verbs: ["get", "list", "watch", "create", "patch"]
  # Events about handled objects (handler failures and retries, events.info/warn from handlers).
  - apiGroups: [""]
    resources: ["events"]
    verbs: ["create", "patch"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: ${settings.appName}
  labels:
    app.kubernetes.io/name: ${settings.appName}
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: ${settings.appName}
subjects:
  - kind: ServiceAccount
    name: ${settings.appName}
    namespace: ${namespace}
---
# Leader election: one Lease in the operator's own namespace (and a listing, to wait for replicas with sharding on).
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: ${settings.appName}-leader-election
  namespace: ${namespace}
  labels:
    app.kubernetes.io/name: ${settings.appName}
rules:
  - apiGroups: ["coordination.k8s.io"]
    resources: ["leases"]
    verbs: ["get", "list", "create", "update"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: ${settings.appName}-leader-election
  namespace: ${namespace}
  labels:
    app.kubernetes.io/name: ${settings.appName}
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: Role
  name: ${settings.appName}-leader-election
subjects:
  - kind: ServiceAccount
    name: ${settings.appName}
    namespace: ${namespace}
`;
}

/** A hardened Deployment: non-root, read-only root filesystem, no capabilities, probes on /healthz and /readyz. */
export function deploymentManifest(settings: ProjectSettings): string {
  return `apiVersion: apps/v1
kind: Deployment
metadata:
  name: ${settings.appName}
  namespace: ${operatorNamespace(settings)}
  labels:
    app.kubernetes.io/name: ${settings.appName}
spec:
  replicas: 1
  selector:
    matchLabels:
      app.kubernetes.io/name: ${settings.appName}
  template:
    metadata:
      labels:
        app.kubernetes.io/name: ${settings.appName}
    spec:
      serviceAccountName: ${settings.appName}
      terminationGracePeriodSeconds: 40   # 30 s drain deadline plus margin
      securityContext:
        runAsNonRoot: true
        runAsUser: 10001
        runAsGroup: 10001
        seccompProfile:
          type: RuntimeDefault
      containers:
        - name: operator
          image: ${settings.appName}:0.1.0
          imagePullPolicy: IfNotPresent
          args: ["run", "src/handlers.ts", "--all-namespaces", "--log-format", "json"]
          # No NODE_OPTIONS: the image's konductor command gives node a heap of half the memory limit below.
          env:
            - name: KONDUCTOR_LEASE_NAMESPACE
              valueFrom:
                fieldRef:
                  fieldPath: metadata.namespace
          ports:
            - name: health
              containerPort: 8080
          volumeMounts:
            # The root filesystem is read-only; konductor run compiles the TypeScript handlers into /tmp.
            - name: tmp
              mountPath: /tmp
          livenessProbe:
            httpGet: { path: /healthz, port: health }
            initialDelaySeconds: 10
            periodSeconds: 20
            failureThreshold: 3
          readinessProbe:
            httpGet: { path: /readyz, port: health }
            periodSeconds: 5
          resources:
            requests: { cpu: 50m, memory: 128Mi }
            limits: { memory: 384Mi }
          securityContext:
            allowPrivilegeEscalation: false
            readOnlyRootFilesystem: true
            capabilities:
              drop: ["ALL"]
      volumes:
        - name: tmp
          emptyDir: {}
`;
}
