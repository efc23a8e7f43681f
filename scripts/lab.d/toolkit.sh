# shellcheck shell=bash
# The lab toolkit: shell helpers that make "machines" on this one: each a root file system of its own (a debootstrap
# of a given Debian release), network, mount and PID namespaces of its own, a cgroup of its own and an nft firewall,
# linked to the harness by a veth on a bridge. Sourced by scripts/lab-hosts (its isolated mode) and meant for any
# other lab script that needs such hosts (docs/topology.md).
#
# The caller sets, before calling anything:
#   LBT_STATE   the state file: every step that makes something appends the step that undoes it (one per line);
#               lbt_down replays them backwards, so a crash half-way is cleaned up by the next `down`
#   LBT_PREFIX  the prefix of every name made (links, namespaces, cgroups, nft tables)
# and may set LBT_CACHE (where rootfs tarballs are kept), LBT_MIRROR (the Debian mirror).
set -euo pipefail

LBT_CACHE=${LBT_CACHE:-/var/cache/layerbench/lab}
LBT_MIRROR=${LBT_MIRROR:-http://deb.debian.org/debian}
LBT_CGROUP_CONTROLLERS=(cpu cpuacct memory pids blkio)  # the v1 hierarchies a host gets a cgroup in

lbt_log() { printf '[lab] %s\n' "$*" >&2; }
lbt_die() { lbt_log "$*"; exit 1; }
lbt_note() { printf '%s\n' "$*" >> "$LBT_STATE"; }  # one undo step, replayed backwards by lbt_down

# ---- root file systems ------------------------------------------------------------------------------------------

# The cache key of a rootfs: the release and the sorted package list (the same list in another order is the same).
lbt_rootfs_key() {  # release package...
  local release=$1; shift
  printf '%s\n' "$release" "$(printf '%s\n' "$@" | sort -u | tr '\n' ' ')" | sha256sum | cut -c1-16
}

# Print the path of a tarball holding a debootstrap of <release> with <packages>; made once, then reused.
# Services are kept from starting while packages are installed (policy-rc.d), and the SSH host keys the packages
# generate are removed, so every host made from it gets keys of its own.
lbt_rootfs() {  # release package...
  local release=$1 key tar tmp; shift
  key=$(lbt_rootfs_key "$release" "$@"); tar=$LBT_CACHE/rootfs-$release-$key.tar
  if [ -s "$tar" ]; then echo "$tar"; return 0; fi
  # one build of a rootfs at a time (the lab and the cluster's harness may want the same one at once): the second
  # waits on the lock and finds the tarball made
  local lock
  mkdir -p "$LBT_CACHE"; exec {lock}>"$LBT_CACHE/.rootfs-$release-$key.lock"
  if ! flock -n "$lock"; then
    lbt_log "waiting for another build of the $release rootfs"
    flock -w 3600 "$lock" || lbt_die "could not get the lock of the $release rootfs within 60 min"
  fi
  if [ -s "$tar" ]; then exec {lock}>&-; echo "$tar"; return 0; fi
  tmp=$(mktemp -d "$LBT_CACHE/build-$release-$key.XXXXXX")
  lbt_log "debootstrap $release with $* (once; cached as $tar)"
  if ! lbt_debootstrap "$release" "$tmp/root" "$@" > "$tmp.log" 2>&1; then
    lbt_lazy_umount "$tmp/root"; rm -rf --one-file-system "$tmp"
    lbt_die "debootstrap of $release with $* failed (is it a release $LBT_MIRROR serves?); see $tmp.log"
  fi
  tar -C "$tmp/root" --numeric-owner -cf "$tar.part" . && mv "$tar.part" "$tar"
  rm -rf "$tmp" "$tmp.log"; exec {lock}>&-; echo "$tar"
}

# Each step checks its status itself: the caller runs this in an `if`, where bash's set -e does not apply.
lbt_debootstrap() {  # release dir package...
  local release=$1 root=$2 rc=0; shift 2
  debootstrap --variant=minbase --include=ca-certificates "$release" "$root" "$LBT_MIRROR" || return 1
  printf '#!/bin/sh\nexit 101\n' > "$root/usr/sbin/policy-rc.d" && chmod +x "$root/usr/sbin/policy-rc.d" || return 1
  mount -t proc proc "$root/proc" || return 1
  DEBIAN_FRONTEND=noninteractive chroot "$root" apt-get install -y -q --no-install-recommends "$@" || rc=1
  umount "$root/proc" || return 1
  [ "$rc" -eq 0 ] && chroot "$root" apt-get clean || return 1
  rm -f "$root"/etc/ssh/ssh_host_* "$root/usr/sbin/policy-rc.d"
}

lbt_lazy_umount() {  # dir: every mount below it, deepest first
  local m
  for m in $(awk -v d="$1" 'index($2, d) == 1 {print $2}' /proc/mounts | sort -r); do umount -l "$m" 2>/dev/null || true; done
}

# Unpack a rootfs tarball into <dir> (a host's /); `down` removes it.
lbt_unpack() {  # tarball dir
  mkdir -p "$2"; lbt_note "rootdir $2"
  tar -C "$2" --numeric-owner -xf "$1"
}

# ---- network: a bridge on the harness, a namespace per host, a veth between them -----------------------------------

# A bridge carrying the harness's address on the lab's subnet, and the FORWARD ACCEPT rules dockerd's DROP policy
# needs for traffic between hosts on it (br_netfilter sends bridged frames through iptables).
lbt_bridge() {  # bridge address/len
  ip link add "$1" type bridge; lbt_note "link $1"
  ip addr add "$2" dev "$1"; ip link set "$1" up
  lbt_accept_bridge "$1"
}

lbt_accept_bridge() {  # bridge: one ACCEPT rule per direction, commented with the prefix
  local dir
  for dir in "-i $1" "-o $1"; do
    # shellcheck disable=SC2086
    iptables -I FORWARD $dir -m comment --comment "$LBT_PREFIX" -j ACCEPT
    lbt_note "iptables FORWARD $dir -m comment --comment $LBT_PREFIX -j ACCEPT"
  done
}

# A network namespace with loopback up and one end of a veth pair at <address>, the other end on <bridge>.
lbt_netns() {  # namespace bridge address/len
  lbt_netns_pair "$1" "$3"
  ip link set "$1-h" master "$2" up
}

# A network namespace reached only through a point-to-point veth, without a bridge (as node 2 of scripts/k8s-local):
# the harness's end at <host-address>, the namespace's at <address>, and in the namespace a route through the
# harness's end to each <destination> only (no default route: what is not listed has no route at all).
lbt_netns_routed() {  # namespace host-address/len address/len destination...
  local ns=$1 host_addr=$2 addr=$3 dest; shift 3
  lbt_netns_pair "$ns" "$addr"
  ip addr add "$host_addr" dev "$ns-h"; ip link set "$ns-h" up
  for dest in "$@"; do ip netns exec "$ns" ip route add "$dest" via "${host_addr%/*}"; done
}

lbt_netns_pair() {  # namespace address/len: the namespace, its loopback up, a veth <ns>-h (harness) <-> <ns>-n (in it)
  local ns=$1 host_end=$1-h ns_end=$1-n
  ip netns add "$ns"; lbt_note "netns $ns"
  ip link add "$host_end" type veth peer name "$ns_end"; lbt_note "link $host_end"
  ip link set "$ns_end" netns "$ns"
  ip netns exec "$ns" ip link set lo up
  ip netns exec "$ns" ip addr add "$2" dev "$ns_end"
  ip netns exec "$ns" ip link set "$ns_end" up
}

# ---- firewall: nft in a host's namespace ---------------------------------------------------------------------------

# Drop every packet coming into the host but loopback, replies, ping, and SSH from the harness's address; ports
# added to the set `open` (lbt_open) are admitted from anywhere. The table goes with the namespace.
lbt_fw_table() { echo "${LBT_PREFIX//-/_}_fw"; }  # nft names take no '-'

lbt_firewall() {  # namespace harness-address
  ip netns exec "$1" nft -f - <<NFT
table inet $(lbt_fw_table) {
  set open { type inet_service; flags interval; }
  chain input {
    type filter hook input priority 0; policy drop;
    iif lo accept
    ct state established,related accept
    ip saddr $2 tcp dport 22 accept
    tcp dport @open accept
    icmp type echo-request accept
  }
}
NFT
}

# The other way round, for a host that is a harness rather than a server: it may open TCP connections only to the
# listed address:port pairs (and use its loopback); nothing else leaves it, and nothing but the replies comes in. A
# TCP connection anywhere else is refused at once (a reset from the firewall), it does not hang.
lbt_egress_firewall() {  # namespace address:port...
  local ns=$1 rules="" pair; shift
  for pair in "$@"; do rules+="    ip daddr ${pair%:*} tcp dport ${pair##*:} accept"$'\n'; done
  ip netns exec "$ns" nft -f - <<NFT
table inet $(lbt_fw_table) {
  chain output {
    type filter hook output priority 0; policy drop;
    oif lo accept
    ct state established,related accept
$rules    meta l4proto tcp reject with tcp reset
    reject with icmpx type admin-prohibited
  }
  chain input {
    type filter hook input priority 0; policy drop;
    iif lo accept
    ct state established,related accept
  }
}
NFT
}

lbt_open() {  # namespace port|first-last...: admit TCP to these ports from anywhere
  local ns=$1; shift
  ip netns exec "$ns" nft add element inet "$(lbt_fw_table)" open "{ $(IFS=,; echo "$*") }"
}

lbt_close() {  # namespace port|first-last...
  local ns=$1; shift
  ip netns exec "$ns" nft delete element inet "$(lbt_fw_table)" open "{ $(IFS=,; echo "$*") }"
}

# ---- cgroups (v1: one directory per controller) ------------------------------------------------------------------

lbt_cgroup() {  # name: /<name> in every controller of LBT_CGROUP_CONTROLLERS
  local c
  lbt_note "cgroup $1"
  for c in "${LBT_CGROUP_CONTROLLERS[@]}"; do mkdir -p "/sys/fs/cgroup/$c/$1"; done
}

lbt_cgroup_enter() {  # name: move the calling (sub)shell into the host's cgroups; its children inherit them
  local c
  for c in "${LBT_CGROUP_CONTROLLERS[@]}"; do echo "$BASHPID" > "/sys/fs/cgroup/$c/$1/cgroup.procs"; done
}

lbt_cgroup_remove() {  # name: kill what is left in it (and below), then remove the directories, deepest first
  local c pids
  for _ in 1 2 3 4 5 6 7 8 9 10; do
    pids=$(find "/sys/fs/cgroup/pids/$1" -name cgroup.procs -exec cat {} + 2>/dev/null || true)
    [ -n "$pids" ] || break
    # shellcheck disable=SC2086
    kill -KILL $pids 2>/dev/null || true
    sleep 0.2
  done
  for c in "${LBT_CGROUP_CONTROLLERS[@]}"; do
    [ -d "/sys/fs/cgroup/$c/$1" ] && find "/sys/fs/cgroup/$c/$1" -depth -type d -exec rmdir {} \; 2>/dev/null
    [ -d "/sys/fs/cgroup/$c/$1" ] && lbt_log "could not remove cgroup /sys/fs/cgroup/$c/$1 (processes still in it?)"
  done
  return 0
}

# ---- a host: its rootfs as /, its own /proc, PID and mount namespaces, in its namespace and cgroup -----------------

LBT_HERE=$(dirname "${BASH_SOURCE[0]}")

# Start the host's init (scripts/lab.d/host-init, copied into its rootfs): it runs sshd (when the rootfs has one) and
# every /lbhost/start.d/* script, then reaps orphans. Its processes are all in the cgroup, so `down` finds them even
# when the state is lost. With `own`, the host also gets a UTS namespace (its hostname: <prefix>-<name>) and a cgroup
# namespace of its own, and sees only its own cgroup in /sys/fs/cgroup: the hierarchies of the machine's other
# cgroups (a cluster's nodes, their pods) are not visible from it. Without, it sees them all (dockerd needs them).
lbt_host_start() {  # name rootdir namespace [own]
  local name=$1 root=$2 ns=$3 cg=$LBT_PREFIX-$1 own=()
  [ "${4:-}" = own ] && own=(--uts --cgroup)
  mkdir -p "$root/lbhost/start.d"; cp "$LBT_HERE/host-init" "$root/lbhost/init"
  lbt_cgroup "$cg"
  ( lbt_cgroup_enter "$cg"
    # nsenter, not `ip netns exec`: that one mounts a /sys of its own, hiding the cgroup hierarchies host-boot binds
    exec setsid nsenter --net="/run/netns/$ns" unshare --pid --mount --fork --propagation private "${own[@]}" \
      bash "$LBT_HERE/host-boot" "$root" "${4:+$cg}" < /dev/null > "$root/lbhost/boot.log" 2>&1 ) &
}

# Run a command in a host as its processes are (its namespaces, root and cgroup), from the harness; with --user, as
# that user of the host's rootfs (its uid and gid there), with only HOME, USER, PATH, LANG and TERM in its
# environment, none of the harness's.
lbt_host_exec() {  # name [--user name] command...
  local name=$1 pid user=() env=(); shift
  pid=$(lbt_host_pid1 "$name") || lbt_die "host $name is not running"
  if [ "${1:-}" = --user ]; then
    user=(-S "$(lbt_host_id "$name" "$2" u)" -G "$(lbt_host_id "$name" "$2" g)")
    env=(env -i "HOME=$(lbt_host_id "$name" "$2" home)" "USER=$2" "LANG=C.UTF-8" "TERM=${TERM:-dumb}"
      "PATH=/opt/layerbench/bin:/usr/local/bin:/usr/bin:/bin"); shift 2
  fi
  ( lbt_cgroup_enter "$LBT_PREFIX-$name"
    exec nsenter -t "$pid" --net --mount --pid --uts --cgroup --root --wd "${user[@]}" -- "${env[@]}" "$@" )
}

lbt_host_id() {  # name user u|g|home: the user's uid, gid or home in the host's /etc/passwd
  local field=3
  case $3 in g) field=4 ;; home) field=6 ;; esac
  awk -F: -v u="$2" -v f="$field" '$1 == u {print $f; found = 1} END {exit !found}' "$(lbt_host_root "$1")/etc/passwd" ||
    lbt_die "host $1 has no user $2"
}

lbt_host_root() {  # name: the host's rootfs as the harness sees it (through its init's /proc/PID/root)
  echo "/proc/$(lbt_host_pid1 "$1")/root"
}

lbt_host_pid1() {  # name: the PID (on the harness) of the host's init
  local pid
  for pid in $(cat "/sys/fs/cgroup/pids/$LBT_PREFIX-$1/cgroup.procs" 2>/dev/null); do
    [ "$(awk '$1 == "NSpid:" {print $NF}' "/proc/$pid/status" 2>/dev/null)" = 1 ] && { echo "$pid"; return 0; }
  done
  return 1
}

lbt_host_keys() {  # rootdir address comment known_hosts: a host key of its own, added to the harness's known_hosts
  rm -f "$1"/etc/ssh/ssh_host_*
  ssh-keygen -q -t ed25519 -N '' -C "$3" -f "$1/etc/ssh/ssh_host_ed25519_key" <<<y >/dev/null
  printf '%s %s\n' "$2" "$(cut -d' ' -f1,2 "$1/etc/ssh/ssh_host_ed25519_key.pub")" >> "$4"
}

# ---- undo ----------------------------------------------------------------------------------------------------------

lbt_undo() {  # one state line; returns 1 for a step it does not know
  set -- $1
  case $1 in
    iptables) shift; while iptables -C "$@" 2>/dev/null; do iptables -D "$@"; done ;;
    netns) ip netns pids "$2" 2>/dev/null | xargs -r kill -KILL 2>/dev/null || true; ip netns del "$2" 2>/dev/null || true ;;
    link) ip link del "$2" 2>/dev/null || true ;;
    cgroup) lbt_cgroup_remove "$2" ;;
    rootdir) lbt_lazy_umount "$2"; rm -rf --one-file-system "$2" ;;
    *) return 1 ;;
  esac
}

lbt_down() {  # replay the state file backwards
  [ -f "$LBT_STATE" ] || return 0
  tac "$LBT_STATE" | while read -r line; do [ -n "$line" ] && { lbt_undo "$line" || true; }; done
  rm -f "$LBT_STATE"
}
