# Sourced by the shell tools for --help and --version.

# The project's version, as meson.build states it.
mscclpp_version() {
  sed -n "s/^ *version: '\([^']*\)',.*/\1/p" "$(dirname "${BASH_SOURCE[0]}")/../../meson.build" | head -1
}

# The --version line, NAME (MSCCL++) VERSION, as every tool prints it.
mscclpp_print_version() {
  echo "$1 (MSCCL++) $(mscclpp_version)"
}

# The usage of the script $1: its header comment without the marks.
# Read from the script itself, so the help cannot drift from the header.
mscclpp_usage() {
  sed -n '2,/^[^#]/{/^#/s/^# \{0,1\}//p}' "$1"
}
