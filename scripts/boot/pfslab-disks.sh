# shellcheck shell=sh
# pfslab-disks: links /dev/disk/pfslab/data<i> to the node's data drives, every boot
# (/dev is rebuilt): local NVMe by model, ordered by serial (stable across boots), or
# the explicit devices of a bare-metal group. Roles use only these names.
#
#   sh -c "<this script>" pfslab-disks paths DEVICE...
#   sh -c "<this script>" pfslab-disks model MODEL COUNT
#
# Not a file on the node: the lab plan (terraform/modules/lab-plan/cloud.tf) puts its
# text into the cloud-init bootcmd (and the boot script of existing hosts), without
# these leading comment lines. So it is POSIX sh, has no shebang, and the lines
# below this header are exactly what a node runs; a change to them changes every
# cloud lab's user-data.
mkdir -p /dev/disk/pfslab
if [ "$1" = paths ]; then
  shift; i=0
  for d in "$@"; do ln -sfn "$d" "/dev/disk/pfslab/data$i"; i=$((i+1)); done
  exit 0
fi
model=$2; want=$3; i=0
for s in $(for b in /sys/block/nvme*n1; do
    [ -e "$b/device/model" ] || continue
    case "$(cat "$b/device/model")" in "$model"*) echo "$(tr -d ' ' <"$b/device/serial")=${b##*/}" ;; esac
  done | sort); do
  ln -sfn "/dev/${s#*=}" "/dev/disk/pfslab/data$i"; i=$((i+1))
done
[ "$i" -ge "$want" ] || echo "pfslab-disks: found $i of $want local NVMe drives of model $model" >&2
