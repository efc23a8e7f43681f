# shellcheck shell=bash
# Sourced by scripts/k8s-local: the second node of `up --nodes 2`.
#
# Node 2 is a kubelet, kube-proxy and containerd of its own in a network namespace and a mount namespace
# (both kept in files under $K/node2/ns, so no /run/netns entry is made), joined to node 1's control
# plane. A veth pair links it to the host: node 2's IP on its side, routes on both sides, its pods on a
# bridge of its own with their own range. With two nodes each node's pods run on a CPU of their own:
# node N's kubelet gets the cgroup root /lbk8s-nodeN whose cpuset is CPU N-1.
set -euo pipefail

NODE2_NAME=${K8S_LOCAL_NODE2_NAME:-layerbench-node-2}
NODE2_IP=${K8S_LOCAL_NODE2_IP:-10.250.0.2}
NODE2_POD_CIDR=${K8S_LOCAL_NODE2_POD_CIDR:-10.245.0.0/16}
NODE2_DEV=${K8S_LOCAL_NODE2_DEV:-lbk8s-n2}     # host side of the veth pair
N2=$K/node2
N2_SOCK=$N2/run/containerd.sock
N2_NETNS=$N2/ns/net
N2_MNTNS=$N2/ns/mnt
NODE_CPU_CGROUPS=(lbk8s-node1 lbk8s-node2)
NODE2_COMPONENTS=(containerd@2 kubelet@2 kube-proxy@2)

in_node2() { nsenter --net="$N2_NETNS" --mount="$N2_MNTNS" -- "$@"; }
ctrc2() { ctr --address "$N2_SOCK" "$@"; }
containerd2_ready() { [ -S "$N2_SOCK" ] && timeout 5 ctr --address "$N2_SOCK" --connect-timeout 2s version >/dev/null 2>&1; }
nodes_of_state() { cat "$K/nodes" 2>/dev/null || echo 1; }

# the v1 hierarchies a kubelet's cgroup root must exist in
cgroup_hierarchies() {
  local d
  for d in /sys/fs/cgroup/*/; do
    d=${d%/}
    [ "${d##*/}" = unified ] && continue
    [ -f "$d/cgroup.procs" ] && echo "$d"
  done
}

# /lbk8s-node1 and /lbk8s-node2: the nodes' cgroup roots. The kubelet writes all the machine's CPUs into
# its kubepods cpuset when it starts (and fails under a narrower parent), so up widens the roots before the
# kubelets start and narrows each tree to its CPU (node N: CPU N-1) once the nodes are Ready; pods created
# later inherit it.
setup_node_cgroups() {
  local h cg
  for cg in "${NODE_CPU_CGROUPS[@]}"; do
    for h in $(cgroup_hierarchies); do mkdir -p "$h/$cg"; done
    cpuset_tree /sys/fs/cgroup/cpuset/$cg "$(cat /sys/fs/cgroup/cpuset/cpuset.cpus)" widen || warn "could not widen every cpuset under /$cg"
    [ -s /sys/fs/cgroup/cpuset/$cg/cpuset.mems ] || cat /sys/fs/cgroup/cpuset/cpuset.mems >/sys/fs/cgroup/cpuset/$cg/cpuset.mems
  done
}

cpuset_tree() { # dir cpus widen|narrow: parents before children to widen, children first to narrow
  local d rc=0
  [ -d "$1" ] || return 0
  if [ "$3" = widen ]; then
    while read -r d; do echo "$2" >"$d/cpuset.cpus" || rc=1; done < <(find "$1" -type d | awk '{print length($0) " " $0}' | sort -n | cut -d' ' -f2-)
  else
    while read -r d; do echo "$2" >"$d/cpuset.cpus" || rc=1; done < <(find "$1" -depth -type d)
  fi
  return $rc
}

# Narrowing races the kubelets: a pod cgroup made (with both CPUs) after `find` listed the tree makes its parent's
# write fail (EBUSY: a child must stay a subset of its parent). Each try lists the tree anew; seen in CI on a
# loaded machine, while the CSI driver's pods started.
narrow_tree() { # dir cpus
  local try
  for try in $(seq 20); do
    cpuset_tree "$1" "$2" narrow 2>/dev/null && return 0
    sleep 0.5
  done
  cpuset_tree "$1" "$2" narrow
}

pin_nodes_to_cpus() {
  narrow_tree /sys/fs/cgroup/cpuset/lbk8s-node1 0 || die "could not pin node 1's cgroups to CPU 0"
  narrow_tree /sys/fs/cgroup/cpuset/lbk8s-node2 1 || die "could not pin node 2's cgroups to CPU 1"
  say "node $NODE_NAME's pods on CPU 0, node $NODE2_NAME's on CPU 1 (cpusets of /lbk8s-node1, /lbk8s-node2)"
}

remove_node_cgroups() {
  local h cg
  for cg in "${NODE_CPU_CGROUPS[@]}"; do
    for h in /sys/fs/cgroup/*; do # also the unified one, where runc makes them too on a hybrid host
      [ -d "$h/$cg" ] || continue
      find "$h/$cg" -depth -type d -exec rmdir {} \; 2>/dev/null || true
      [ -d "$h/$cg" ] && warn "could not remove cgroup $h/$cg (processes still in it?)"
    done
  done
  return 0
}

# the namespaces, kept in files; the kubelet's fixed host paths get private copies inside
setup_node2_namespaces() {
  mkdir -p "$N2/ns" "$N2/private/var-lib-kubelet" "$N2/private/var-lib-cni" "$N2/private/var-log-containers"
  if ! findmnt -rn "$N2_NETNS" >/dev/null 2>&1; then
    touch "$N2_NETNS" "$N2_MNTNS"
    mkdir -p /var/lib/kubelet /var/lib/cni /var/log/containers
    unshare --net="$N2_NETNS" --mount="$N2_MNTNS" --propagation private -- sh -c "
      mount --bind '$N2/private/var-lib-kubelet' /var/lib/kubelet &&
      mount --bind '$N2/private/var-lib-cni' /var/lib/cni &&
      mount --bind '$N2/private/var-log-containers' /var/log/containers && ip link set lo up" ||
      die "could not create node 2's namespaces in $N2/ns"
    say "created node 2's network and mount namespaces ($N2/ns)"
  fi
  if ! ip link show "$NODE2_DEV" >/dev/null 2>&1; then
    nsenter --net="$N2_NETNS" -- ip link add eth0 type veth peer name "$NODE2_DEV" netns $$
    say "created the veth pair $NODE2_DEV (host) <-> eth0 (node 2)"
  fi
  ip link set "$NODE2_DEV" up
  nsenter --net="$N2_NETNS" -- sh -c "ip addr replace $NODE2_IP/32 dev eth0 && ip link set eth0 up &&
    ip route replace $NODE_IP dev eth0 && ip route replace default via $NODE_IP dev eth0 onlink"
  ip route replace "$NODE2_IP/32" dev "$NODE2_DEV" src "$NODE_IP"
  ip route replace "$NODE2_POD_CIDR" via "$NODE2_IP" dev "$NODE2_DEV"
  # dockerd sets FORWARD's policy to DROP: let the nodes' pods reach each other (a CNI- chain, so `down`
  # removes it with the CNI plugins' own)
  iptables -N CNI-LBK8S-NODES 2>/dev/null || iptables -F CNI-LBK8S-NODES
  iptables -A CNI-LBK8S-NODES -i "$NODE2_DEV" -j ACCEPT
  iptables -A CNI-LBK8S-NODES -o "$NODE2_DEV" -j ACCEPT
  iptables -C FORWARD -j CNI-LBK8S-NODES 2>/dev/null || iptables -I FORWARD 1 -j CNI-LBK8S-NODES
}

gen_node2_config() {
  local E=$K/etc E2=$N2/etc
  mkdir -p "$E2/cni" "$N2/containerd" "$N2/kubelet" "$N2/pod-logs" "$N2/cni-ipam" "$N2/run" \
    "$N2/kubelet-plugins/volume/exec"
  sed -e "s|$K/containerd/|$N2/containerd/|g" -e "s|$RUN/|$N2/run/|g" -e "s|\"$SOCK|\"$N2_SOCK|g" \
    -e "s|$E/cni|$E2/cni|g" "$E/containerd.toml" >"$E2/containerd.toml"
  sed -e "s|$POD_CIDR|$NODE2_POD_CIDR|g" -e "s|\"$POD_GW\"|\"$(cidr_first_ip "$NODE2_POD_CIDR")\"|g" \
    -e "s|$K/cni-ipam|$N2/cni-ipam|g" -e 's|"layerbench-k8s-local"|"layerbench-k8s-local-2"|' \
    "$E/cni/10-layerbench.conflist" >"$E2/cni/10-layerbench.conflist"
  sed -e "s|unix://$SOCK|unix://$N2_SOCK|g" -e "s|^address: .*|address: $NODE2_IP|" \
    -e "s|$K/pod-logs|$N2/pod-logs|" -e "s|$K/kubelet-plugins|$N2/kubelet-plugins|" \
    -e 's|^cgroupRoot: .*|cgroupRoot: /lbk8s-node2|' "$E/kubelet.yaml" >"$E2/kubelet.yaml"
  sed -e "s|^hostnameOverride: .*|hostnameOverride: $NODE2_NAME|" -e "s|$NODE_IP/32|$NODE2_IP/32|" \
    "$E/kube-proxy.yaml" >"$E2/kube-proxy.yaml"
}

# into each containerd (of node 1 and node 2)
import_into_node2() { # docker-archive file
  ctrc2 -n k8s.io images import "$1" >/dev/null || die "could not import $1 into node 2's containerd"
}

node2_ready() {
  [ "$(kc get node "$NODE2_NAME" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null)" = True ]
}
# Ready as node 2's running kubelet reports it (as node_freshly_ready for node 1): on a warm up the node object
# still says Ready from the last run, and narrowing its cgroups before the new kubelet has made its kubepods
# cpuset makes that kubelet fail ("failed to write 0-1 ... permission denied") and the node go NotReady later
node2_freshly_ready() { # epoch seconds node 2's kubelet started (0: it was already running)
  pid_of kubelet@2 >/dev/null || return 1
  local st hb
  read -r st hb <<<"$(kc get node "$NODE2_NAME" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status} {.status.conditions[?(@.type=="Ready")].lastHeartbeatTime}' 2>/dev/null)"
  [ "$st" = True ] && [ -n "$hb" ] && [ "$(date -u -d "$hb" +%s)" -ge "$1" ]
}

start_node2() {
  gen_node2_config
  setup_node2_namespaces
  # node 2's own processes: in its network and mount namespaces and its cgroup (so on its CPU)
  local h procs=""
  for h in $(cgroup_hierarchies); do procs="$procs $h/lbk8s-node2/cgroup.procs"; done
  N2_ENTER=(nsenter --net="$N2_NETNS" --mount="$N2_MNTNS" --)
  start_in_cgroup containerd@2 "$procs" "$(command -v containerd)" --config "$N2/etc/containerd.toml"
  waitfor "node 2's containerd ready" 30 containerd@2 containerd2_ready || { show_log_tail containerd@2; die "node 2's containerd did not answer"; }
  grep -qxF "$PAUSE_IMAGE" <<<"$(ctrc2 -n k8s.io images ls -q 2>/dev/null)" || import_into_node2 "$PAUSE_TAR"
  local t_kubelet=0
  if ! pid_of kubelet@2 >/dev/null; then
    rm -f "$N2/kubelet/cpu_manager_state" "$N2/kubelet/memory_manager_state"
    t_kubelet=$(date +%s)
  fi
  start_in_cgroup kubelet@2 "$procs" "$BIN/kubelet" --config="$N2/etc/kubelet.yaml" \
    --kubeconfig="$K/etc/kubelet.kubeconfig" --root-dir="$N2/kubelet" --cert-dir="$N2/kubelet/pki" \
    --hostname-override="$NODE2_NAME" --node-ip="$NODE2_IP"
  start_in_cgroup kube-proxy@2 "$procs" "$BIN/kube-proxy" --config="$N2/etc/kube-proxy.yaml"
  waitfor "node $NODE2_NAME Ready" "$READY_TIMEOUT" containerd@2,kubelet@2,kube-proxy@2 node2_freshly_ready "$t_kubelet" ||
    { show_log_tail kubelet@2 30; die "node $NODE2_NAME not Ready within ${READY_TIMEOUT}s"; }
  pin_nodes_to_cpus
  kc label node "$NODE_NAME" layerbench.k8s-local/node=1 --overwrite >/dev/null
  kc label node "$NODE2_NAME" layerbench.k8s-local/node=2 --overwrite >/dev/null
}

start_in_cgroup() { # name "cgroup.procs files" cmd...: like start, inside node 2's namespaces and cgroups
  local n=$1 procs=$2 pid i; shift 2
  if pid=$(pid_of "$n"); then say "$n already running (pid $pid)"; return 0; fi
  rm -f "$PIDS/$n.pid"
  printf '==== %s k8s-local start: %s\n' "$(date -Is)" "$*" >>"$LOGS/$n.log"
  # shellcheck disable=SC2016
  setsid bash -c 'echo $$ >"$0"; for f in $1; do echo $$ >"$f"; done; shift; exec "$@"' "$PIDS/$n.pid" "$procs" \
    "${N2_ENTER[@]}" "$@" >>"$LOGS/$n.log" 2>&1 </dev/null 8>&- 9>&- &
  wait_exec "$n"
  say "started $n (pid $(cat "$PIDS/$n.pid" 2>/dev/null || echo '?'), log $LOGS/$n.log)"
}

stop_node2() {
  stop kube-proxy@2
  stop kubelet@2
  if pid_of containerd@2 >/dev/null && containerd2_ready; then
    local t c
    for t in $(ctrc2 -n k8s.io tasks ls -q 2>/dev/null); do ctrc2 -n k8s.io tasks kill -a -s SIGKILL "$t" >/dev/null 2>&1 || true; done
    for t in $(ctrc2 -n k8s.io tasks ls -q 2>/dev/null); do ctrc2 -n k8s.io tasks delete -f "$t" >/dev/null 2>&1 || true; done
    for c in $(ctrc2 -n k8s.io containers ls -q 2>/dev/null); do ctrc2 -n k8s.io containers delete "$c" >/dev/null 2>&1 || true; done
  fi
  stop containerd@2
}

remove_node2_network() {
  if ip link show "$NODE2_DEV" >/dev/null 2>&1; then ip link del "$NODE2_DEV" && say "removed device $NODE2_DEV"; fi
  return 0
}
