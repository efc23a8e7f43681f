# shellcheck shell=bash
# Sourced by scripts/k8s-local: the isolated harness (`harness up|down|status|exec -- CMD...`), a machine of its own
# in all but the kernel beside the running cluster, from which layerbench reaches the cluster as from a laptop or a CI
# runner: through the API server and the registry only. Made with the lab toolkit (scripts/lab.d/toolkit.sh):
#   - a debootstrap of Debian bookworm (its python3 3.11) as /, cached as the lab's rootfs tarballs are;
#   - PID, mount, UTS (hostname <prefix>-harness) and cgroup namespaces of its own, a v1 cgroup /<prefix>-harness;
#   - a network namespace linked to this machine by a point-to-point veth (<prefix>-h, 10.231.81.1 here, .2 inside)
#     with one route, to the node IP, and an nft firewall that lets it open TCP connections to the API server's port
#     and the registry's port on the node IP and nowhere else (no kubelet, no NodePort, no pod or cluster IP);
#   - layerbench of this source tree in a venv (/opt/layerbench), installed inside, with its network already cut,
#     from a wheelhouse built here (`pip wheel`; the dependencies' wheels cached);
#   - a user `layerbench` whose ~/.kube/config names the API server at the node IP, as seen from inside;
#   - sysbench (Debian's, as the Jobs' image has) and this cluster's kubectl in /opt/client-tools/bin, which is on
#     no PATH: `client: job` needs neither, and a test puts them on the PATH only to run `client: port-forward`
#     (sysbench here, through kubectl port-forward over the API server), as a laptop with both would.
# `harness exec -- CMD` runs CMD inside as that user. `down` removes it all, also after its state file is lost.
#
# K8S_LOCAL_HARNESS_PREFIX [lbhar]  K8S_LOCAL_HARNESS_NET [10.231.81] (a /24 nothing else here uses)
# K8S_LOCAL_HARNESS_PYTHON [python3] a Python 3.11 with pip here, to build the wheelhouse

set -euo pipefail

HARNESS_PREFIX=${K8S_LOCAL_HARNESS_PREFIX:-lbhar}
HARNESS_NET=${K8S_LOCAL_HARNESS_NET:-10.231.81}
HARNESS_DIR=$K/harness
HARNESS_ROOT=$HARNESS_DIR/root
HARNESS_NS=$HARNESS_PREFIX
HARNESS_RELEASE=bookworm  # its python3 is 3.11, as layerbench's wheels are built for
# skopeo: an image's architecture is read from its registry (server/image_registry.py). sysbench: moved off the PATH
# (harness_rootfs_files): with every sysbench a Job, validate checks a built-in test by name against the Job image's
# (run/preflight.py sysbench_here, check_test), and the harness's tests show that none is needed here
HARNESS_PACKAGES=(python3 python3-venv procps iproute2 skopeo sysbench)
HARNESS_TOOLS=/opt/client-tools/bin  # inside: sysbench and kubectl, on no PATH
HARNESS_USER=layerbench
HARNESS_WHEELS=$CACHE_ROOT/harness/wheels  # the dependencies' wheels, kept between harnesses

# the toolkit's settings, for the harness's calls only (the cluster's own state is not the toolkit's)
harness_toolkit() {
  export LBT_STATE=$HARNESS_DIR/state LBT_PREFIX=$HARNESS_PREFIX LBT_CACHE=$CACHE_ROOT/lab
  # shellcheck source=scripts/lab.d/toolkit.sh
  . "$(dirname "$(readlink -f "$0")")/lab.d/toolkit.sh"
}

harness_in() { lbt_host_exec harness "$@"; }  # as root, inside

# The settings go into link, namespace, cgroup and nft names (at most 15 characters for a link: <prefix>-h) and
# addresses: checked before anything is made.
harness_check_settings() {
  [[ $HARNESS_PREFIX =~ ^[a-z][a-z0-9]{0,11}$ ]] ||
    die "K8S_LOCAL_HARNESS_PREFIX=$(printf '%q' "$HARNESS_PREFIX") is not a name of 1-12 lowercase letters and digits starting with a letter; e.g. lbhar"
  local octet ok=1
  if [[ $HARNESS_NET =~ ^(0|[1-9][0-9]{0,2})\.(0|[1-9][0-9]{0,2})\.(0|[1-9][0-9]{0,2})$ ]]; then
    for octet in "${BASH_REMATCH[@]:1}"; do [ "$octet" -le 255 ] || ok=0; done
  else ok=0; fi
  [ $ok = 1 ] || die "K8S_LOCAL_HARNESS_NET=$(printf '%q' "$HARNESS_NET") is not the first three parts of an IPv4 /24; e.g. 10.231.81"
}

cmd_harness() {
  harness_check_settings
  harness_toolkit
  local sub=${1:-}; shift || true
  case $sub in
    up) need_root; harness_lock; harness_up ;;
    down) need_root; harness_lock; harness_down ;;
    status) harness_status ;;
    exec) need_root; [ "${1:-}" = -- ] && shift
      [ $# -gt 0 ] || die "usage: scripts/k8s-local harness exec -- CMD..."
      harness_running || die "the harness is not up: scripts/k8s-local harness up"
      harness_in --user "$HARNESS_USER" "$@" ;;
    *) die "usage: scripts/k8s-local harness up|down|status|exec -- CMD..." ;;
  esac
}

harness_lock() { take_lock 7 "/run/lock/layerbench-k8s-local-harness-$(printf '%s' "$K" | md5sum | cut -c1-10).lock"; }

harness_running() { lbt_host_pid1 harness >/dev/null && [ -f "$(lbt_host_root harness)/run/lbhost-booted" ]; }

harness_up() {
  local t0=$SECONDS tar
  if [ -f "$LBT_STATE" ] && harness_status >/dev/null 2>&1; then say "the harness is up already"; return 0; fi
  apiserver_ready || die "the cluster's API server does not answer: scripts/k8s-local up first"
  registry_ready || die "the lab registry does not answer on $REGISTRY_ADDR: scripts/k8s-local registry up first"
  harness_net_free
  [ -f "$LBT_STATE" ] && { say "a half-made harness is left (state file): removing it first"; harness_down; }
  mkdir -p "$HARNESS_DIR"; chmod 700 "$HARNESS_DIR"; : >"$LBT_STATE"
  CLEANUPS+=('[ "${HARNESS_DONE:-0}" = 1 ] || { warn "harness up failed: removing what it made"; harness_down; }')
  tar=$(lbt_rootfs "$HARNESS_RELEASE" "${HARNESS_PACKAGES[@]}")
  harness_wheelhouse "$HARNESS_DIR/wheels"
  lbt_unpack "$tar" "$HARNESS_ROOT"
  harness_rootfs_files
  lbt_netns_routed "$HARNESS_NS" "$HARNESS_NET.1/24" "$HARNESS_NET.2/24" "$NODE_IP/32"
  lbt_egress_firewall "$HARNESS_NS" "$NODE_IP:$APISERVER_PORT" "$NODE_IP:$REGISTRY_PORT"
  lbt_host_start harness "$HARNESS_ROOT" "$HARNESS_NS" own 7>&-  # its processes must not hold the harness's lock
  waitfor "the harness booted" 60 - harness_running || die "the harness did not boot in 60s: $HARNESS_ROOT/lbhost/boot.log"
  harness_install "$tar"
  harness_in --user "$HARNESS_USER" layerbench --version >/dev/null || die "layerbench does not start in the harness"
  # shellcheck disable=SC2034  # read by the cleanup step above (eval)
  HARNESS_DONE=1
  say "harness up in $((SECONDS - t0))s: $HARNESS_PREFIX-harness at $HARNESS_NET.2, reaching only $NODE_IP:$APISERVER_PORT (API) and $NODE_IP:$REGISTRY_PORT (registry)"
  say "    run: scripts/k8s-local harness exec -- layerbench ...   (as user $HARNESS_USER, KUBECONFIG ~/.kube/config)"
  say "    sysbench and kubectl are in $HARNESS_TOOLS inside, on no PATH (client: port-forward needs them)"
}

harness_net_free() {  # the harness's /24 must be nobody else's
  local addrs routes
  addrs=$(ip -4 -o addr show | grep -v " $HARNESS_NS-h " || true)
  routes=$(ip -4 route show | grep -v "dev $HARNESS_NS-h" || true)
  if [[ $addrs == *" $HARNESS_NET."* || $'\n'$routes == *$'\n'"$HARNESS_NET."* ]]; then
    die "$HARNESS_NET.0/24 is already used on this machine (ip addr / ip route): set K8S_LOCAL_HARNESS_NET"
  fi
}

# The wheelhouse: layerbench of this source tree (built anew each time) and its dependencies (kept in
# $HARNESS_WHEELS: a harness up with nothing new to fetch asks no index), for a Python 3.11 as the rootfs's.
harness_wheelhouse() {  # dir
  local py=${K8S_LOCAL_HARNESS_PYTHON:-python3} src log=$HARNESS_DIR/wheels.log version
  src=$(cd "$(dirname "$(readlink -f "$0")")/.." && pwd)
  version=$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null) ||
    die "K8S_LOCAL_HARNESS_PYTHON=$py does not run: name a Python 3.11 with pip"
  [ "$version" = 3.11 ] || die "K8S_LOCAL_HARNESS_PYTHON=$py is Python $version: the harness's $HARNESS_RELEASE has 3.11; name a Python 3.11"
  mkdir -p "$1" "$HARNESS_WHEELS"
  say "building the wheelhouse: layerbench of $src and its dependencies"
  "$py" -m pip wheel -q --no-deps -w "$1" "$src" >"$log" 2>&1 ||
    { tail -20 "$log" >&2; die "pip wheel of $src failed ($log)"; }
  if ! "$py" -m pip wheel -q --no-index --find-links "$HARNESS_WHEELS" -w "$HARNESS_WHEELS" "$1"/layerbench-*.whl >>"$log" 2>&1; then
    "$py" -m pip wheel -q --find-links "$HARNESS_WHEELS" -w "$HARNESS_WHEELS" "$1"/layerbench-*.whl >>"$log" 2>&1 ||
      { tail -20 "$log" >&2; die "pip wheel of layerbench's dependencies failed ($log)"; }
  fi
  rm -f "$HARNESS_WHEELS"/layerbench-*.whl
}

# layerbench into /opt/layerbench inside, with the harness's network already cut (pip --no-index from the wheelhouse).
# Its dependencies' install (numpy, scipy, kubernetes...: 26 s here) is kept as a tarball of the venv, keyed by the
# rootfs and the wheelhouse's dependency wheels: the next harness unpacks it and installs only layerbench's own
# wheel into it (7 s), then `pip check` must pass (a dependency layerbench newly asks for fails it: a fresh install
# then, whose venv replaces the kept one).
harness_install() {  # rootfs tarball
  local key kept log=$HARNESS_DIR/install.log
  key=$(printf '%s\n' "$(basename "$1")" "$(find "$HARNESS_WHEELS" -maxdepth 1 -name '*.whl' -printf '%f\n' | sort)" | sha256sum | cut -c1-16)
  kept=$CACHE_ROOT/harness/venv-$key.tar
  if [ -s "$kept" ]; then
    say "installing layerbench inside into its kept dependencies' venv (pip --no-index, then pip check)"
    if tar -C "$HARNESS_ROOT/opt" -xf "$kept" && harness_in sh -c '/opt/layerbench/bin/pip install -q --no-index \
        --no-cache-dir --no-deps --force-reinstall /opt/wheels/layerbench-*.whl && /opt/layerbench/bin/pip check' \
        >"$log" 2>&1; then
      rm -rf "$HARNESS_ROOT/opt/wheels"; return 0
    fi
    warn "the kept venv $kept does not fit this layerbench ($(tail -1 "$log")): installing anew"
    rm -rf "$HARNESS_ROOT/opt/layerbench" "$kept"
  fi
  say "installing layerbench inside, with its network cut (pip --no-index from the wheelhouse)"
  harness_in sh -c 'python3 -m venv /opt/layerbench && /opt/layerbench/bin/pip install -q --no-index \
    --no-cache-dir --find-links /opt/wheels layerbench' >"$log" 2>&1 ||
    { tail -20 "$log" >&2; die "pip install in the harness failed ($log)"; }
  rm -rf "$HARNESS_ROOT/opt/wheels"
  rm -f "$CACHE_ROOT"/harness/venv-*.tar  # one kept venv: the newest
  if ! { tar -C "$HARNESS_ROOT/opt" -cf "$kept.part.$$" layerbench && mv "$kept.part.$$" "$kept"; }; then
    rm -f "$kept.part.$$"; warn "could not keep the harness's venv in $kept (the next harness installs anew)"
  fi
}

# Into the unpacked rootfs: the wheelhouse, the user, its kubeconfig (the admin's: the API server's address is the
# node IP, which the harness reaches), a hostname and hosts file of its own, and the client tools off the PATH.
harness_rootfs_files() {
  local r=$HARNESS_ROOT home=$HARNESS_ROOT/home/$HARNESS_USER
  mkdir -p "$r/opt/wheels"; cp "$HARNESS_DIR"/wheels/*.whl "$HARNESS_WHEELS"/*.whl "$r/opt/wheels/"
  [ -x "$BIN/kubectl" ] || die "no kubectl in $BIN: scripts/k8s-local build first"
  mkdir -p "$r$HARNESS_TOOLS"; mv "$r/usr/bin/sysbench" "$r$HARNESS_TOOLS/sysbench"
  install -m 0755 "$BIN/kubectl" "$r$HARNESS_TOOLS/kubectl"
  chroot "$r" useradd -m -s /bin/bash "$HARNESS_USER"
  mkdir -p "$home/.kube"; cp "$KUBECONFIG_PATH" "$home/.kube/config"; chmod 600 "$home/.kube/config"
  chroot "$r" chown -R "$HARNESS_USER:$HARNESS_USER" "/home/$HARNESS_USER"
  echo "$HARNESS_PREFIX-harness" >"$r/etc/hostname"
  printf '127.0.0.1 localhost\n%s.2 %s-harness\n' "$HARNESS_NET" "$HARNESS_PREFIX" >"$r/etc/hosts"
  : >"$r/etc/resolv.conf"  # no DNS: the harness reaches addresses, not names
}

# Removes what `up` made: the state file's steps backwards, then by name what a lost state file cannot list.
harness_down() {
  lbt_down
  lbt_undo "cgroup $HARNESS_PREFIX-harness"
  grep -qw "$HARNESS_NS" <<<"$(ip netns list 2>/dev/null)" && lbt_undo "netns $HARNESS_NS"
  ip link show "$HARNESS_NS-h" >/dev/null 2>&1 && lbt_undo "link $HARNESS_NS-h"
  lbt_undo "rootdir $HARNESS_ROOT"
  rm -rf --one-file-system "$HARNESS_DIR"
  say "harness down: no namespace, link, cgroup, firewall or rootfs of $HARNESS_PREFIX left"
}

harness_status() {  # exit 0 when it is up and layerbench runs inside
  local ok=0
  [ -f "$LBT_STATE" ] && echo "harness state:           $LBT_STATE" || { echo "harness state:           none"; ok=1; }
  if harness_running; then echo "harness init:            running (pid $(lbt_host_pid1 harness) here)"
  else echo "harness init:            not running"; ok=1; fi
  if ip netns exec "$HARNESS_NS" nft list table inet "$(lbt_fw_table)" >/dev/null 2>&1; then
    echo "harness firewall:        $HARNESS_NS: only $NODE_IP:$APISERVER_PORT and $NODE_IP:$REGISTRY_PORT"
  else echo "harness firewall:        absent"; ok=1; fi
  if [ $ok = 0 ] && harness_in --user "$HARNESS_USER" layerbench --version >/dev/null 2>&1; then
    echo "harness:                 up (scripts/k8s-local harness exec -- layerbench ...)"
  else echo "harness:                 not up (scripts/k8s-local harness up)"; ok=1; fi
  return $ok
}
