# shellcheck shell=bash
# The lab's image registry (sourced by scripts/k8s-local): Debian's docker-registry (the CNCF distribution)
# on the node IP, its storage under the cluster's state dir, plain HTTP. Every node's containerd pulls from it
# through a hosts.toml under $K/etc/certs.d (containerd's config_path, in the generated containerd.toml), so a pod
# with image: $NODE_IP:$REGISTRY_PORT/layerbench/... is pulled by the node as from any registry.
#
#   scripts/k8s-local registry up|down|status
#
# K8S_LOCAL_REGISTRY_PORT [the state dir's, else 15000]: its TCP port on the node IP.

registry_port_of_state() { sed -n 's/^REGISTRY=.*:\([0-9]*\)$/\1/p' "$K/cluster.env" 2>/dev/null || true; }
REGISTRY_PORT=${K8S_LOCAL_REGISTRY_PORT:-$(registry_port_of_state)}
REGISTRY_PORT=${REGISTRY_PORT:-15000}
REGISTRY_ADDR=$NODE_IP:$REGISTRY_PORT
REGISTRY_DIR=$K/registry
REGISTRY_CONF=$K/etc/registry.yml
REGISTRY_HOSTS=$K/etc/certs.d # containerd's config_path: one folder per registry host, each with a hosts.toml
REGISTRY_BIN=/usr/bin/docker-registry

# the registry's config and the nodes' hosts.toml (called by gen_config, before containerd starts)
gen_registry_config() {
  [[ "$REGISTRY_PORT" =~ ^[0-9]{1,5}$ ]] && [ "$REGISTRY_PORT" -ge 1 ] && [ "$REGISTRY_PORT" -le 65535 ] ||
    die "K8S_LOCAL_REGISTRY_PORT=$REGISTRY_PORT is not a TCP port (1-65535)"
  mkdir -p "$REGISTRY_DIR" "$REGISTRY_HOSTS"
  rm -rf "${REGISTRY_HOSTS:?}"/*  # a registry of an earlier port: the nodes no longer pull from it
  mkdir -p "$REGISTRY_HOSTS/$REGISTRY_ADDR"
  cat >"$REGISTRY_HOSTS/$REGISTRY_ADDR/hosts.toml" <<EOT
# written by scripts/k8s-local: the lab registry, plain HTTP on the node IP
server = "http://$REGISTRY_ADDR"

[host."http://$REGISTRY_ADDR"]
  capabilities = ["pull", "resolve"]
EOT
  cat >"$REGISTRY_CONF" <<EOT
# written by scripts/k8s-local: the lab registry (docker-registry from Debian)
version: 0.1
log:
  level: warn
  fields: {service: registry}
storage:
  filesystem: {rootdirectory: $REGISTRY_DIR}
  delete: {enabled: true}
http:
  addr: $REGISTRY_ADDR
  headers:
    X-Content-Type-Options: [nosniff]
EOT
}

registry_ready() { [ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 3 "http://$REGISTRY_ADDR/v2/")" = 200 ]; }

registry_up() {
  command -v "$REGISTRY_BIN" >/dev/null || ensure_packages docker-registry
  ip -o -4 addr show dev "$NODE_DEV" 2>/dev/null | grep -qF " $NODE_IP/" ||
    die "the node IP $NODE_IP is not up on $NODE_DEV: scripts/k8s-local up starts the registry with the cluster"
  [ -f "$REGISTRY_CONF" ] || gen_registry_config
  if ! pid_of docker-registry >/dev/null && port_busy "$REGISTRY_PORT"; then
    die "TCP port $REGISTRY_PORT (for the registry) is already in use: $(ss -Hltnp "sport = :$REGISTRY_PORT" | sed -n 1p | tr -s ' ') -- set K8S_LOCAL_REGISTRY_PORT"
  fi
  local t0=$SECONDS
  start docker-registry "$REGISTRY_BIN" serve "$REGISTRY_CONF"
  waitfor "registry ready (http://$REGISTRY_ADDR, storage $REGISTRY_DIR)" 30 docker-registry registry_ready ||
    { show_log_tail docker-registry; die "the registry did not answer on http://$REGISTRY_ADDR/v2/ within 30s"; }
  say "registry up in $((SECONDS - t0))s: push to $REGISTRY_ADDR (layerbench image push $REGISTRY_ADDR)"
}

registry_status() { # exit 0 when it answers
  local pid
  if pid=$(pid_of docker-registry) && registry_ready; then
    printf '%-24s running (pid %s, http://%s, storage %s)\n' docker-registry "$pid" "$REGISTRY_ADDR" "$REGISTRY_DIR"
  else
    printf '%-24s stopped\n' docker-registry; return 1
  fi
}

cmd_registry() {
  case "${1:-}" in
    up) need_root; lock_cluster; registry_up ;;
    down) need_root; lock_cluster; stop docker-registry ;;
    status) registry_status ;;
    *) die "usage: scripts/k8s-local registry up|down|status" ;;
  esac
}
