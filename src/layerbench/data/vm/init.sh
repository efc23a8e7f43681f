#!/bin/sh
# layerbench's guest init (PID 1 in the VM): mounts the data and config disks, brings up the network from the
# kernel command line (lb.ip=ADDR/LEN lb.gw=GW), starts the server with the campaign's my.cnf, and reports on the
# serial console: LAYERBENCH-READY when the server answers, LAYERBENCH-DOWN after a clean shutdown, then powers
# the VM off. Nothing else runs in the guest. Which server, how its empty datadir is made and how it is asked
# whether it is up are the flavour's (MariaDB, MySQL): the config disk's server.sh defines init_datadir,
# run_server and server_ready (written by the host, backends/vm/local.py), so this file names no server program.
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
say() { echo "$*" > /dev/console; }
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs dev /dev 2>/dev/null
mkdir -p /dev/pts /dev/shm /run /tmp
mount -t tmpfs tmpfs /run
mount -t tmpfs tmpfs /tmp
mount -t devpts devpts /dev/pts
for arg in $(cat /proc/cmdline); do
  case "$arg" in lb.ip=*) IP=${arg#lb.ip=} ;; lb.gw=*) GW=${arg#lb.gw=} ;; esac
done
mount -o ro /dev/vdc /etc/layerbench || { say "LAYERBENCH-FAILED no config disk"; echo o > /proc/sysrq-trigger; }
mount /dev/vdb /var/lib/mysql || { say "LAYERBENCH-FAILED no data disk"; echo o > /proc/sysrq-trigger; }
[ -f /etc/layerbench/server.sh ] || { say "LAYERBENCH-FAILED no server.sh on the config disk"; echo o > /proc/sysrq-trigger; }
. /etc/layerbench/server.sh
# a minbase rootfs without iproute2 (the MySQL one) carries the host's busybox-static for it
command -v ip > /dev/null 2>&1 || ip() { /usr/local/lib/layerbench/busybox ip "$@"; }
ip link set lo up
NIC=$(ls /sys/class/net | grep -v '^lo$' | head -n 1)
ip link set "$NIC" up
ip addr add "$IP" dev "$NIC"
[ -n "$GW" ] && ip route add default via "$GW"
mkdir -p /run/mysqld
if [ -f /etc/layerbench/fresh ]; then
  rmdir /var/lib/mysql/lost+found 2> /dev/null  # MySQL's --initialize wants an empty folder
  init_datadir > /dev/null 2>&1 || say "LAYERBENCH-NOTE the datadir init failed"
fi
say "LAYERBENCH-BOOTED $(cut -d' ' -f1 /proc/uptime) s"
run_server --defaults-file=/etc/layerbench/my.cnf --init-file=/etc/layerbench/init.sql > /dev/console 2>&1 &
SERVER=$!
while kill -0 "$SERVER" 2>/dev/null; do
  if server_ready > /dev/null 2>&1; then
    say "LAYERBENCH-READY $(cut -d' ' -f1 /proc/uptime) s"
    break
  fi
  sleep 0.5
done
wait "$SERVER"
say "LAYERBENCH-SERVER-EXIT $?"
sync
umount /var/lib/mysql
say "LAYERBENCH-DOWN"
echo o > /proc/sysrq-trigger
sleep 30
