# Certificates, kubeconfigs and component configs of the local node, written under $S.
# shellcheck shell=bash

# A certificate signed by the cluster CA: $1 name, $2 subject, $3 subjectAltName (or empty), $4 key usage.
sign() {
  local name=$1 subject=$2 san=$3 usage=$4 ext
  ext="$S/pki/$name.ext"
  {
    echo "basicConstraints=CA:FALSE"
    echo "keyUsage=critical,digitalSignature,keyEncipherment"
    echo "extendedKeyUsage=$usage"
    [ -n "$san" ] && echo "subjectAltName=$san"
  } > "$ext"
  openssl ecparam -name prime256v1 -genkey -noout -out "$S/pki/$name.key" 2>/dev/null
  openssl req -new -key "$S/pki/$name.key" -subj "$subject" -out "$S/pki/$name.csr" 2>/dev/null
  openssl x509 -req -in "$S/pki/$name.csr" -CA "$S/pki/ca.crt" -CAkey "$S/pki/ca.key" -CAcreateserial \
    -days 30 -extfile "$ext" -out "$S/pki/$name.crt" 2>/dev/null || die "could not sign the $name certificate"
}

write_pki() {
  mkdir -p "$S/pki"
  openssl ecparam -name prime256v1 -genkey -noout -out "$S/pki/ca.key" 2>/dev/null
  openssl req -x509 -new -key "$S/pki/ca.key" -subj "/CN=konductor-local-node-ca" -days 30 -out "$S/pki/ca.crt" 2>/dev/null \
    || die "openssl could not make the cluster CA"
  sign apiserver "/CN=kube-apiserver" \
    "IP:$NODE_IP,IP:$API_SERVICE_IP,IP:127.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local" \
    serverAuth
  sign kubelet "/CN=$NODE_NAME" "IP:$NODE_IP,DNS:$NODE_NAME" serverAuth
  openssl ecparam -name prime256v1 -genkey -noout -out "$S/pki/sa.key" 2>/dev/null
  openssl ec -in "$S/pki/sa.key" -pubout -out "$S/pki/sa.pub" 2>/dev/null
  local admin node
  admin=$(openssl rand -hex 24)
  node=$(openssl rand -hex 24)
  printf '%s,admin,admin,system:masters\n%s,system:node:%s,node,system:nodes\n' "$admin" "$node" "$NODE_NAME" > "$S/pki/tokens.csv"
  chmod 600 "$S/pki/"*.key "$S/pki/tokens.csv"
  printf '%s' "$admin" > "$S/pki/admin.token"
  printf '%s' "$node" > "$S/pki/node.token"
}

# A kubeconfig: $1 file, $2 server URL, $3 token file.
write_kubeconfig() {
  cat > "$1" <<EOF
apiVersion: v1
kind: Config
clusters:
  - name: konductor-local
    cluster:
      server: $2
      certificate-authority: $S/pki/ca.crt
users:
  - name: user
    user:
      token: $(cat "$3")
contexts:
  - name: konductor-local
    context: { cluster: konductor-local, user: user, namespace: default }
current-context: konductor-local
EOF
  chmod 600 "$1"
}

write_configs() {
  mkdir -p "$S/etc" "$S/cni/net.d" "$S/run/dns" "$S/run/kubelet" "$S/run/containerd" "$S/logs" "$S/pids"
  write_kubeconfig "$S/kubeconfig" "https://127.0.0.1:$HOST_PORT" "$S/pki/admin.token"
  write_kubeconfig "$S/etc/admin.kubeconfig" "https://$NODE_IP:6443" "$S/pki/admin.token"
  write_kubeconfig "$S/etc/node.kubeconfig" "https://$NODE_IP:6443" "$S/pki/node.token"
  cat > "$S/etc/containerd.toml" <<EOF
version = 2
root = "$S/run/containerd/root"
state = "$S/run/containerd/state"
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper"]
[grpc]
  address = "$S/run/containerd/containerd.sock"
[ttrpc]
  address = "$S/run/containerd/containerd.sock.ttrpc"
[plugins."io.containerd.internal.v1.opt"]
  path = "$S/run/containerd/opt"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "k8s.gcr.io/pause:3.2"
  disable_apparmor = true
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        BinaryName = "/usr/sbin/runc"
        Root = "$S/run/runc"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$S/cni/net.d"
EOF
  # No default route and no masquerade: Pods reach each other, the node and Services, nothing else.
  cat > "$S/cni/net.d/10-konductor.conflist" <<EOF
{
  "cniVersion": "0.4.0",
  "name": "konductor-local",
  "plugins": [
    {
      "type": "bridge", "bridge": "$BRIDGE", "isGateway": true, "ipMasq": false, "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "ranges": [[{ "subnet": "$POD_SUBNET", "rangeStart": "10.244.0.10", "gateway": "$NODE_IP" }]],
        "routes": [{ "dst": "$SERVICE_SUBNET" }],
        "dataDir": "$S/run/cni-ipam"
      }
    },
    { "type": "portmap", "capabilities": { "portMappings": true } }
  ]
}
EOF
  cat > "$S/etc/kubelet.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: $NODE_IP
port: 10250
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: 10248
authentication:
  anonymous: { enabled: true }
  webhook: { enabled: false }
authorization:
  mode: AlwaysAllow
tlsCertFile: $S/pki/kubelet.crt
tlsPrivateKeyFile: $S/pki/kubelet.key
cgroupDriver: cgroupfs
cgroupRoot: /$CGROUP_PARENT
cgroupsPerQOS: true
enforceNodeAllocatable: ["none"]
failSwapOn: false
clusterDomain: cluster.local
clusterDNS: ["$NODE_IP"]
serializeImagePulls: false
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard:
  memory.available: "100Mi"
  nodefs.available: "1%"
  imagefs.available: "1%"
  nodefs.inodesFree: "1%"
rotateCertificates: false
serverTLSBootstrap: false
maxPods: 40
nodeStatusUpdateFrequency: 4s
syncFrequency: 10s
fileCheckFrequency: 60s
EOF
}
