# shellcheck shell=sh
# pfslab-ipoib: Azure HB/HC-series nodes put the lab's address on the InfiniBand
# interface (IPoIB), every boot (an IPoIB address does not survive a reboot).
#
#   sh -c "<this script>" pfslab-ipoib ADDRESS/PREFIX soft|hard
#
# With no InfiniBand interface it reports it and fails only when hard: bootcmd runs
# it soft on every boot, runcmd hard at the first (a failing runcmd fails cloud-init,
# which scripts/remote-up reports).
#
# Not a file on the node: the lab plan (terraform/modules/lab-plan/cloud.tf) puts its
# text into the cloud-init user-data without these leading comment lines. So it is
# POSIX sh, has no shebang, and the lines below this header are exactly what a node
# runs; a change to them changes every Azure InfiniBand lab's user-data.
for n in /sys/class/net/*; do
  [ "$(cat "$n/type" 2>/dev/null)" = 32 ] || continue
  ip addr replace "$1" dev "${n##*/}" && ip link set "${n##*/}" up && exit 0
done
echo "pfslab-ipoib: no InfiniBand interface for $1" >&2
[ "$2" = soft ]
