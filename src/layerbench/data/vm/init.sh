#!/bin/sh
# layerbench's guest init (PID 1 in the VM): mounts the data and config disks, brings up the network from the
# kernel command line (lb.ip=ADDR/LEN lb.gw=GW), starts mariadbd with the campaign's my.cnf, and reports on the
# serial console: LAYERBENCH-READY when the server answers, LAYERBENCH-DOWN after a clean shutdown, then powers
# the VM off. Nothing else runs in the guest.
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
ip link set lo up
NIC=$(ls /sys/class/net | grep -v '^lo$' | head -n 1)
ip link set "$NIC" up
ip addr add "$IP" dev "$NIC"
[ -n "$GW" ] && ip route add default via "$GW"
mkdir -p /run/mysqld
if [ -f /etc/layerbench/fresh ]; then
  mariadb-install-db --no-defaults --datadir=/var/lib/mysql --user=root --auth-root-authentication-method=socket \
    --skip-test-db > /dev/null 2>&1
fi
say "LAYERBENCH-BOOTED $(cut -d' ' -f1 /proc/uptime) s"
mariadbd --defaults-file=/etc/layerbench/my.cnf --init-file=/etc/layerbench/init.sql > /dev/console 2>&1 &
SERVER=$!
while kill -0 "$SERVER" 2>/dev/null; do
  if mariadb-admin --socket=/run/mysqld/mysqld.sock ping > /dev/null 2>&1; then
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
