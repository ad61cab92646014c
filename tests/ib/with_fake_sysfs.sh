#!/bin/bash
# Runs a command with IBV_DOUBLE_DEVICES naming two HCAs, mlx5_0 and mlx5_1,
# whose sysfs folders (ibdev_path) are made up in a temporary folder: each
# HCA's PCI device sits under its own root port and is local to one CPU,
# mlx5_0 to CPU 0 and mlx5_1 to CPU 1, as the kernel's local_cpulist says.
# The folder is removed on exit.
#   with_fake_sysfs.sh -- command [args...]
set -u
[ "${1:-}" = "--" ] && shift
[ $# -gt 0 ] || { echo "with_fake_sysfs.sh: no command" >&2; exit 2; }
dir=$(mktemp -d "${TMPDIR:-/tmp}/mscclpp-sysfs.XXXXXX") || exit 2
trap 'rm -rf "$dir"' EXIT
devices=""
for i in 0 1; do
  pci="$dir/devices/pci0000:00/0000:00:0$((i + 1)).0/0000:0$((i + 1)):00.0"
  mkdir -p "$pci" "$dir/class/mlx5_$i"
  echo "$i" > "$pci/local_cpulist"
  ln -s "$pci" "$dir/class/mlx5_$i/device"
  devices="$devices${devices:+,}mlx5_$i:sysfs=$dir/class/mlx5_$i"
done
export IBV_DOUBLE_DEVICES="$devices"
"$@"
